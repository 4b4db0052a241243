package mpi

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/zorilla-p2p/zorilla/mpi/internal/proto"
)

// Session is one rank process's connection to its agent. It owns the world
// communicator. All its methods are safe for concurrent use.
type Session struct {
	conn    *net.UnixConn
	rank    int
	size    int
	replica int
	maxData int   // data bytes per MSG fragment, from the agent
	hostOf  []int // agent index of each rank's first copy
	siteOf  []int // site index of each rank's first copy (all 0 on one site)
	world   *Comm
	comms   comms // next unused communicator number

	sendMu    sync.Mutex // guards sendq, writing, seq, syncs, sendShut
	sendq     []*sendReq
	writing   bool                 // a goroutine is draining sendq
	seq       []uint64             // next sequence number per destination rank
	syncs     map[syncKey]*Request // a replicated copy's synchronous sends waiting for their SyncAck
	syncEarly map[syncKey]bool     // SyncAcks of messages this copy has not sent yet (its lead's were matched)
	sendShut  error                // set once Finalize or Abort is posted
	finalOnce sync.Once

	mu      sync.Mutex // guards m and partial
	m       matcher
	partial []*inMsg // message being received, per source rank

	ck  *checkpoints // Checkpoint's state (checkpoint.go)
	shm shmState     // rings to and from ranks on this agent (shm.go)

	rep     *replication // set (before START) when the rank is replicated; nil otherwise
	repOnce sync.Once

	started chan struct{} // closed on START
	dead    chan struct{} // closed when the reader ends
	rerr    error         // why the reader ended; written before dead is closed
}

// InitWith connects to the agent named in opt, introduces this rank, and
// waits until the agent releases every rank of the job (the second phase of
// the two-phase start). It returns when the job may communicate, or with an
// error when ctx ends, the agent refuses, or the job fails before the agent
// released this rank: a job that fails after the release makes the
// session's calls fail instead. Init's outcome follows the order in which
// the agent released the rank and ended the job.
func InitWith(ctx context.Context, opt Options) (*Session, error) {
	if err := opt.validate(); err != nil {
		return nil, err
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", opt.Socket)
	if err != nil {
		return nil, fmt.Errorf("mpi: connect to agent at %s: %w", opt.Socket, err)
	}
	conn := c.(*net.UnixConn)
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	s, err := handshake(conn, opt)
	if err != nil {
		_ = conn.Close()
		return nil, ctxErr(ctx, err)
	}
	if err := s.awaitRelease(ctx); err != nil {
		_ = conn.Close()
		return nil, err
	}
	return s, nil
}

// awaitRelease waits for the agent's Start, or for the session to end
// before it. The reader handles frames in order, so a session that ended
// with started closed was released first: that is a success, however the
// two closes were seen here (a select over both picks at random once both
// are closed, and a rank released before another's Abort then failed in
// Init instead of in its first call).
func (s *Session) awaitRelease(ctx context.Context) error {
	select {
	case <-s.started:
		return nil
	case <-s.dead:
	}
	if isClosed(s.started) && ctx.Err() == nil {
		return nil
	}
	return ctxErr(ctx, fmt.Errorf("mpi: init: %w", s.deadErr()))
}

// ctxErr prefers the context's error when the context ended: the broken
// connection is then only its consequence.
func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("mpi: init: %w", ctx.Err())
	}
	return err
}

// socketBuffer is the send and receive buffer asked for the agent socket.
const socketBuffer = 4 << 20

// handshake sends Hello, reads Welcome and starts the reader.
func handshake(conn *net.UnixConn, opt Options) (*Session, error) {
	hello := proto.Hello{Version: proto.Version, Rank: uint32(opt.Rank), Size: uint32(opt.Size),
		Replica: uint32(opt.Replica), Job: opt.Job, Key: opt.Key, Flags: proto.HelloShm}
	// Large socket buffers let a large message flow without stalling at
	// every 208 KiB (the kernel's default) for the agent to wake up; the
	// kernel caps them at net.core.wmem_max and rmem_max.
	_ = conn.SetWriteBuffer(socketBuffer)
	_ = conn.SetReadBuffer(socketBuffer)
	if _, err := conn.Write(hello.Encode()); err != nil {
		return nil, fmt.Errorf("mpi: send hello: %w", err)
	}
	// The agent's first bytes may carry shared-memory ring files (shm.go),
	// which a plain read would drop.
	first, fds, err := readFirst(conn)
	if err != nil {
		return nil, fmt.Errorf("%w: reading the agent's answer: %w", ErrAgentLost, err)
	}
	br := bufio.NewReaderSize(io.MultiReader(bytes.NewReader(first), conn), 64<<10)
	f, err := proto.ReadFrame(br, max(proto.MaxControl, proto.WelcomeLimit(opt.Size)))
	if err != nil {
		closeFds(fds)
		return nil, fmt.Errorf("%w: reading the agent's answer: %w", ErrAgentLost, err)
	}
	w, err := welcome(f, opt.Size)
	if err != nil {
		closeFds(fds)
		return nil, err
	}
	s := newSession(conn, opt, int(w.MaxData))
	s.shm.fds = fds
	for i, h := range w.HostOf {
		s.hostOf[i] = int(h)
	}
	for i, site := range w.SiteOf {
		s.siteOf[i] = int(site)
	}
	switch {
	case opt.Restore != "":
		if err := s.restore(opt.Restore); err != nil {
			return nil, err
		}
	case opt.RestoreDir != "":
		s.restoreResized(opt)
	}
	go s.readLoop(br)
	return s, nil
}

// newSession is a session of rank opt.Rank over conn, before its reader
// starts: every rank on host 0 and site 0 until the welcome says otherwise.
func newSession(conn *net.UnixConn, opt Options, maxData int) *Session {
	s := &Session{
		conn: conn, rank: opt.Rank, size: opt.Size, replica: opt.Replica,
		maxData: maxData, hostOf: make([]int, opt.Size), siteOf: make([]int, opt.Size),
		seq: make([]uint64, opt.Size), syncs: map[syncKey]*Request{}, syncEarly: map[syncKey]bool{}, partial: make([]*inMsg, opt.Size),
		started: make(chan struct{}), dead: make(chan struct{}),
	}
	s.world = &Comm{s: s, rank: opt.Rank, size: opt.Size, p2p: proto.CtxWorld, coll: proto.CtxWorldColl, hosts: new(hostsOnce)}
	s.ck = newCheckpoints(opt)
	return s
}

// sitesSplitHost reports whether w puts two ranks of one host on two sites.
func sitesSplitHost(w proto.Welcome) bool {
	site := map[uint32]uint32{}
	for r, s := range w.SiteOf {
		h := w.HostOf[r]
		if prev, ok := site[h]; ok && prev != s {
			return true
		}
		site[h] = s
	}
	return false
}

// welcome interprets the agent's first answer.
func welcome(f proto.Frame, size int) (proto.Welcome, error) {
	switch f.Type() {
	case proto.TypeWelcome:
		w, err := proto.DecodeWelcome(f.Body())
		if err != nil {
			return w, fmt.Errorf("%w: %w", ErrProtocol, err)
		}
		if w.Version != proto.Version || len(w.HostOf) != size || w.MaxData == 0 || sitesSplitHost(w) {
			return w, fmt.Errorf("%w: welcome for version %d, %d ranks, %d-byte fragments",
				ErrProtocol, w.Version, len(w.HostOf), w.MaxData)
		}
		return w, nil
	case proto.TypeRefused:
		r, err := proto.DecodeRefused(f.Body())
		if err != nil {
			return proto.Welcome{}, fmt.Errorf("%w: %w", ErrRefused, err)
		}
		return proto.Welcome{}, fmt.Errorf("%w: %s", ErrRefused, r.Reason)
	case proto.TypeFail:
		fl, err := proto.DecodeFail(f.Body())
		if err != nil {
			return proto.Welcome{}, fmt.Errorf("%w: %w", ErrProtocol, err)
		}
		return proto.Welcome{}, jobError(fl)
	}
	return proto.Welcome{}, fmt.Errorf("%w: frame type %d before welcome", ErrProtocol, f.Type())
}

// World is the communicator of every rank of the job.
func (s *Session) World() *Comm { return s.world }

// HostOf returns, for each rank, a number identifying the agent (machine)
// that runs it: ranks with the same number share a machine.
func (s *Session) HostOf() []int { return append([]int(nil), s.hostOf...) }

// SiteOf returns, for each rank, a number identifying the site of its
// agent (agents the submitter found close to one another); all 0 when the
// job runs on one site.
func (s *Session) SiteOf() []int { return append([]int(nil), s.siteOf...) }

// Replica is which copy of its rank this process is (0 unless the job is
// replicated).
func (s *Session) Replica() int { return s.replica }

// Finalize waits until every message this rank sent has been handed to the
// agent, tells the agent the rank is done and closes the connection. Later
// calls return ErrFinalized. Finalize does not wait for other ranks.
func (s *Session) Finalize() error {
	err := ErrFinalized
	s.finalOnce.Do(func() {
		r := s.postControl(proto.NewFrame(proto.TypeFinalize, 0), ErrFinalized, false)
		// ErrFinalized here is the agent's Bye, which can end the session
		// before the writer marks the Finalize frame written.
		if _, err = r.Wait(); err != nil && !errors.Is(err, ErrFinalized) {
			err = fmt.Errorf("mpi: finalize: %w", err)
			return
		}
		<-s.dead
		if err = s.deadErr(); errors.Is(err, ErrFinalized) {
			err = nil
		}
	})
	return err
}

// Abort asks the agent to end the whole job: every rank's blocked and later
// calls return a JobError with this code. The caller should then exit with
// code; the library itself never exits the process.
func (s *Session) Abort(code int) error {
	var err error
	s.finalOnce.Do(func() {
		a := proto.Abort{Code: int32(code), Reason: fmt.Sprintf("rank %d called Abort(%d)", s.rank, code)}
		shut := &JobError{Cause: "aborted", Rank: s.rank, Code: code, Reason: "this rank called Abort"}
		r := s.postControl(a.Encode(), shut, true)
		_, err = r.Wait()
		_ = s.conn.Close()
	})
	return err
}

// The process-wide session used by Init, World, Finalize and Abort.
var global struct {
	mu sync.Mutex
	s  *Session
}

// Init connects this process to its agent using the ZORILLA_* environment
// variables the agent sets, and waits for the job to start. Use World to get
// the world communicator. On a host with more of the job's ranks than
// cores, Init leaves the Go runtime a single P unless the GOMAXPROCS
// environment variable is set (procs.go).
func Init(ctx context.Context) error {
	global.mu.Lock()
	defer global.mu.Unlock()
	if global.s != nil {
		return fmt.Errorf("%w: Init called twice", ErrArg)
	}
	opt, err := OptionsFromEnv()
	if err != nil {
		return err
	}
	s, err := InitWith(ctx, opt)
	if err != nil {
		return err
	}
	s.fitProcs()
	global.s = s
	return nil
}

func session() *Session {
	global.mu.Lock()
	defer global.mu.Unlock()
	return global.s
}

// World returns the world communicator of the process's session, or nil
// before Init.
func World() *Comm {
	if s := session(); s != nil {
		return s.World()
	}
	return nil
}

// Finalize finalizes the process's session (see Session.Finalize).
func Finalize() error {
	if s := session(); s != nil {
		return s.Finalize()
	}
	return ErrNotInit
}

// Abort aborts the job from the process's session (see Session.Abort).
func Abort(code int) error {
	if s := session(); s != nil {
		return s.Abort(code)
	}
	return ErrNotInit
}
