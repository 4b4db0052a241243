package router

import (
	"bufio"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	logging "github.com/ipfs/go-log/v2"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/mpi/internal/proto"
)

var log = logging.Logger("zorilla/mpi/router")

// ProtocolID is the link protocol between the agents of a job.
const ProtocolID = "/zorilla/mpi/2.0.0"

// Errors of the router.
var (
	ErrClosed    = errors.New("router: closed")
	ErrJobExists = errors.New("router: job already added")
)

// endedMemory is how many removed job IDs a router remembers, so that a late
// link open for a job that ended here is told so rather than refused as
// unknown.
const endedMemory = 1024

// Router is the agent side of the MPI runtime: it serves the agent's MPI
// unix socket and the link protocol, and routes the messages of every job
// added to it.
type Router struct {
	h       host.Host
	cfg     Config
	path    string
	ln      *net.UnixListener
	pending chan struct{} // one token per connection still in its handshake
	frames  *framePool
	wg      sync.WaitGroup
	sent    Traffic // MSG frames written to links, updated atomically
	recv    Traffic // MSG frames read from links and handed to a local copy, atomically
	local   Traffic // MSG frames from a local copy queued for a local copy, atomically

	mu     sync.Mutex // guards jobs, ended, endedQ, closed
	jobs   map[string]*Job
	ended  map[string]*Failure // removed jobs, with their failure (nil if they ended well)
	endedQ []string            // ended, oldest first
	closed bool
}

// New starts a router on host h, listening for rank processes on the unix
// socket at socketPath (created with cfg.SocketMode; a stale socket left by
// a dead agent is replaced). Its lifetime ends with Close.
func New(h host.Host, socketPath string, cfg Config) (*Router, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := removeStale(socketPath); err != nil {
		return nil, err
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: socketPath, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("router: listen on %s: %w", socketPath, err)
	}
	ln.SetUnlinkOnClose(true)
	if err := os.Chmod(socketPath, cfg.SocketMode); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("router: chmod %s: %w", socketPath, err)
	}
	r := &Router{h: h, cfg: cfg, path: socketPath, ln: ln, pending: make(chan struct{}, cfg.MaxPending),
		frames: newFramePool(cfg.frameMax()),
		jobs:   map[string]*Job{}, ended: map[string]*Failure{}}
	h.SetStreamHandler(ProtocolID, r.handleStream)
	r.wg.Add(1)
	go r.acceptLoop()
	return r, nil
}

// removeStale removes a socket file nobody listens on any more.
func removeStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("router: %w", err)
	}
	if fi.Mode()&os.ModeSocket == 0 {
		return fmt.Errorf("router: %s exists and is not a socket", path)
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		_ = c.Close()
		return fmt.Errorf("router: %s is in use by another process", path)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("router: remove stale socket: %w", err)
	}
	return nil
}

// Traffic counts MSG frames and their bytes (headers included): written to
// links, it is what replication costs on the wire.
type Traffic struct {
	Frames, Bytes int64
}

// Sent returns the MSG traffic this router has written to links so far.
func (r *Router) Sent() Traffic {
	return r.sent.load()
}

// Totals are a router's MSG totals since it started, over all its jobs: a
// message of many fragments counts once per fragment, and a fragment sent
// to two copies of its destination counts twice.
type Totals struct {
	Sent     Traffic // written to links to other agents (resends included)
	Received Traffic // read from links and handed to a local copy
	Local    Traffic // from a local copy to a local copy through the router (not over shared memory)
}

// Stats returns the router's totals so far; it is safe to call at any time.
func (r *Router) Stats() Totals {
	return Totals{Sent: r.Sent(), Received: r.recv.load(), Local: r.local.load()}
}

func (t *Traffic) load() Traffic {
	return Traffic{Frames: atomic.LoadInt64(&t.Frames), Bytes: atomic.LoadInt64(&t.Bytes)}
}

func (t *Traffic) add(f proto.Frame) {
	atomic.AddInt64(&t.Frames, 1)
	atomic.AddInt64(&t.Bytes, int64(len(f)))
}

func (r *Router) countSent(f proto.Frame) { r.sent.add(f) }

// Socket is the path of the MPI socket.
func (r *Router) Socket() string { return r.path }

// AddJob prepares routing for a job, before its processes start.
func (r *Router) AddJob(spec JobSpec) (*Job, error) {
	if err := spec.validate(r.h.ID()); err != nil {
		return nil, fmt.Errorf("router: add job %q: %w", spec.ID, err)
	}
	spec.Local = append([]Proc(nil), spec.Local...)
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.closed:
		return nil, ErrClosed
	case r.jobs[spec.ID] != nil:
		return nil, fmt.Errorf("%w: %s", ErrJobExists, spec.ID)
	}
	delete(r.ended, spec.ID) // a retried start may reuse the ID (with a new key)
	j := newJob(r, spec)
	r.jobs[spec.ID] = j
	return j, nil
}

// Job returns the job with this ID, or nil.
func (r *Router) Job(id string) *Job {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.jobs[id]
}

// RemoveJob ends a job here: its ranks' connections and its streams close
// and its state is freed. A job removed while local ranks still run fails
// first, everywhere. It returns once the job's goroutines have ended.
func (r *Router) RemoveJob(id string) {
	r.mu.Lock()
	j := r.jobs[id]
	r.mu.Unlock()
	if j == nil {
		return
	}
	// The job counts as ended from the moment it leaves the table: a link
	// opened by an agent released later must hear "ended here", never "no
	// such job", or it would take this agent for lost.
	r.mu.Lock()
	if r.jobs[id] == j {
		delete(r.jobs, id)
		r.remember(id, j.failure())
	}
	r.mu.Unlock()
	j.shutdown()
	failure := j.failure()
	r.mu.Lock()
	if _, ended := r.ended[id]; ended && r.jobs[id] == nil {
		r.ended[id] = failure // shutting down may have recorded why it failed
	}
	r.mu.Unlock()
}

// remember records a removed job and its failure, forgetting the oldest;
// r.mu is held.
func (r *Router) remember(id string, failure *Failure) {
	r.ended[id] = failure
	r.endedQ = append(r.endedQ, id)
	if len(r.endedQ) > endedMemory {
		delete(r.ended, r.endedQ[0])
		r.endedQ = r.endedQ[1:]
	}
}

// lookup finds a job for a handshake, or says why there is none: it ended
// here (ended, with its failure if it failed), or it is unknown.
func (r *Router) lookup(id string) (j *Job, ended bool, failure *Failure) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if j := r.jobs[id]; j != nil {
		return j, false, nil
	}
	failure, ended = r.ended[id]
	return nil, ended, failure
}

// refusal says why a process may not join job id when lookup found no job.
func refusal(id string, ended bool, failure *Failure) *proto.Refused {
	switch {
	case failure != nil:
		return &proto.Refused{Code: proto.RefuseFailed, Reason: failure.Error()}
	case ended:
		return &proto.Refused{Code: proto.RefuseEnded, Reason: "job " + id + " has ended here"}
	}
	return &proto.Refused{Code: proto.RefuseUnknown, Reason: "no job " + id + " here"}
}

// Close stops accepting, removes every job and waits for every goroutine.
func (r *Router) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	ids := make([]string, 0, len(r.jobs))
	for id := range r.jobs {
		ids = append(ids, id)
	}
	r.mu.Unlock()
	r.h.RemoveStreamHandler(ProtocolID)
	err := r.ln.Close()
	for _, id := range ids {
		r.RemoveJob(id)
	}
	r.wg.Wait()
	return err
}

func (r *Router) acceptLoop() {
	defer r.wg.Done()
	for {
		c, err := r.ln.AcceptUnix()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				log.Errorf("mpi socket accept: %v", err)
			}
			return
		}
		select {
		case r.pending <- struct{}{}:
		default:
			writeAndClose(c, proto.Refused{Code: proto.RefuseBusy, Reason: "too many connections"}.Encode())
			continue
		}
		r.wg.Add(1)
		go r.serveConn(c)
	}
}

// serveConn authenticates a rank process: Hello within the hello timeout,
// a known job, the right key, a copy that runs here. Anything else is
// refused and closed without touching any job.
func (r *Router) serveConn(c *net.UnixConn) {
	defer r.wg.Done()
	defer func() { <-r.pending }()
	_ = c.SetDeadline(time.Now().Add(r.cfg.HelloTimeout))
	if r.cfg.SocketBuffer > 0 { // best effort: the kernel's ceiling applies
		_ = c.SetWriteBuffer(r.cfg.SocketBuffer)
		_ = c.SetReadBuffer(r.cfg.SocketBuffer)
	}
	br := bufio.NewReaderSize(c, 64<<10)
	f, err := proto.ReadFrame(br, proto.MaxControl)
	if err != nil {
		writeAndClose(c, proto.Refused{Code: proto.RefuseMalformed, Reason: err.Error()}.Encode())
		return
	}
	h, err := proto.DecodeHello(f.Body())
	if f.Type() != proto.TypeHello || err != nil {
		writeAndClose(c, proto.Refused{Code: proto.RefuseMalformed, Reason: fmt.Sprintf("expected hello: %v", err)}.Encode())
		return
	}
	j, refusal := r.checkHello(h)
	if refusal != nil {
		log.Debugf("refused rank %d of job %q: %s", h.Rank, h.Job, refusal.Reason)
		writeAndClose(c, refusal.Encode())
		return
	}
	j.attach(Proc{Rank: int(h.Rank), Replica: int(h.Replica)}, c, br, h.Flags&proto.HelloShm != 0)
}

// checkHello finds the job a Hello is for and checks its credentials.
func (r *Router) checkHello(h proto.Hello) (*Job, *proto.Refused) {
	if h.Version != proto.Version {
		return nil, &proto.Refused{Code: proto.RefuseVersion, Reason: fmt.Sprintf("protocol version %d, want %d", h.Version, proto.Version)}
	}
	j, ended, failure := r.lookup(h.Job)
	if j == nil {
		return nil, refusal(h.Job, ended, failure)
	}
	if subtle.ConstantTimeCompare([]byte(h.Key), []byte(j.spec.Key)) != 1 {
		return nil, &proto.Refused{Code: proto.RefuseKey, Reason: "wrong job key"}
	}
	if int(h.Size) != j.spec.Size {
		return nil, &proto.Refused{Code: proto.RefuseMember, Reason: fmt.Sprintf("size %d, the job has %d ranks", h.Size, j.spec.Size)}
	}
	return j, nil
}

// handleStream serves a link opened by another agent of a job.
func (r *Router) handleStream(s network.Stream) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		_ = s.Reset()
		return
	}
	r.wg.Add(1)
	r.mu.Unlock()
	defer r.wg.Done()
	_ = s.SetDeadline(time.Now().Add(r.cfg.HelloTimeout))
	br := bufio.NewReaderSize(s, 64<<10)
	f, err := proto.ReadFrame(br, proto.MaxControl)
	if err != nil || f.Type() != proto.TypeOpen {
		_ = s.Reset()
		return
	}
	o, err := proto.DecodeOpen(f.Body())
	if err != nil || o.Version != proto.Version {
		refuse(s, proto.Refused{Code: proto.RefuseMalformed, Reason: fmt.Sprintf("bad open: %v", err)})
		return
	}
	j, ended, failure := r.lookup(o.Job)
	if j == nil && ended {
		answerEnded(s, r.cfg, failure)
		return
	}
	if j == nil {
		refuse(s, *refusal(o.Job, false, nil))
		return
	}
	if refused := j.checkOpen(o, s.Conn().RemotePeer()); refused != nil {
		refuse(s, *refused)
		return
	}
	_ = s.SetDeadline(time.Time{})
	j.serveInbound(s, br)
}

// checkOpen checks a link open: the right key, from an agent of the job.
func (j *Job) checkOpen(o proto.Open, from peer.ID) *proto.Refused {
	if subtle.ConstantTimeCompare([]byte(o.Key), []byte(j.spec.Key)) != 1 {
		return &proto.Refused{Code: proto.RefuseKey, Reason: "wrong job key"}
	}
	for _, copies := range j.hosts {
		for _, h := range copies {
			if h != from {
				continue
			}
			j.mu.Lock()
			lost, gone := j.lost[from], j.err != nil && j.err.gone
			j.mu.Unlock()
			switch {
			case gone:
				return &proto.Refused{Code: proto.RefuseGone, Reason: "this agent left the job"}
			case lost:
				return &proto.Refused{Code: proto.RefuseFenced, Reason: "agent was counted lost by the job"}
			}
			return nil
		}
	}
	return &proto.Refused{Code: proto.RefuseMember, Reason: "peer runs no rank of the job"}
}
