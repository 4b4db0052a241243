package mpi

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/zorilla-p2p/zorilla/mpi/internal/proto"
	"github.com/zorilla-p2p/zorilla/mpi/internal/shm"
)

// Shared memory between ranks on one agent. The process asks for it in
// Hello; the agent passes one ring file per direction and co-located peer
// with Welcome (Shm frame, SCM_RIGHTS), and names before Start the peers
// whose rings are live (ShmOn). From then on every message to such a peer
// is written into its ring as the same MSG frames the agent would carry
// (fragments, sequence numbers and all; a large one as a rendezvous whose
// bytes the reader copies out of the writer's memory, shm_cma.go), and
// one reader goroutine per incoming ring feeds the same matching engine
// as the agent's socket: the program cannot tell the paths apart. Everything read from a ring is
// checked like bytes from the network (the source is stamped from the ring,
// sequence numbers must follow each other); a peer that breaks the rules
// makes this rank abort the job with the reason, and never crashes it.
// Failures still travel through the agent: a peer that dies is noticed by
// the agent at once, and its Fail ends the waits on rings too.
//
// Who reads a ring: whoever holds its inRing's lock, a frame at a time. A
// receive blocked on a rank with a ring (or on AnySource) polls the ring(s)
// and reads them itself for shmPollTime (shmPoll; not at all on a host with
// more ranks than cores, where every wait sleeps at once), so a small message is
// matched and copied by the thread that waits for it; then it sleeps on its
// request like any other, and the standby reader goroutine (shmReadLoop),
// which sleeps on the ring's futex meanwhile without asking for wake-ups,
// reads what comes. Probe, Waitany and the other waits rely on the standby
// reader alone. An Alltoall(v) among ranks that all have rings is moved by
// its calling goroutine alone, holding its peers' rings for its duration
// (the exchange engine, shm_engine.go).

// shmState is a session's rings.
type shmState struct {
	fds     []int                // ring files from the first read, until the Shm frame claims them (reader goroutine)
	pending map[shmKey]*shm.Ring // mapped rings, until ShmOn says which are live (reader goroutine)
	mu      sync.RWMutex         // held shared while writing to an out ring or polling in rings; exclusively to unmap
	out     []*shm.Ring          // by destination rank; set before Start, read-only until unmapped
	in      []*inRing            // by source rank; set before Start
	list    []*inRing            // the rings of in, for a receive from AnySource
	closed  bool                 // rings unmapped; guarded by mu
	readers sync.WaitGroup       // the ring reader goroutines
	cmaMin  int                  // smallest message sent single-copy, 0 for none (shm_cma.go); set before Start
	poll    time.Duration        // how long a blocked receive polls its rings (shmPoll); set before Start
	cmaOff  []atomic.Bool        // by destination rank: it cannot read this process's memory (shm_cma.go)

	// Frames read by a receive polling a ring, and by the standby readers
	// (which the fast path makes rare in a ping-pong: tests look).
	polled, standby atomic.Int64
	cmaIn           atomic.Int64 // messages received single-copy (shm_cma.go)
	engineRuns      atomic.Int64 // collectives the exchange engine moved (shm_engine.go)
}

type shmKey struct {
	peer int
	dir  uint8
}

// readFirst reads the agent's first bytes, with the ring files passed
// alongside them.
func readFirst(conn *net.UnixConn) ([]byte, []int, error) {
	buf := make([]byte, 64<<10)
	oob := make([]byte, unix.CmsgSpace(4*2*proto.MaxShmPeers))
	for {
		n, oobn, _, _, err := conn.ReadMsgUnix(buf, oob)
		fds := rights(oob[:oobn])
		if n > 0 || err != nil {
			if err != nil && n == 0 {
				closeFds(fds)
				return nil, nil, err
			}
			return buf[:n], fds, nil
		}
		closeFds(fds)
	}
}

// rights returns the files in a control message.
func rights(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for _, m := range msgs {
		if f, err := unix.ParseUnixRights(&m); err == nil {
			fds = append(fds, f...)
		}
	}
	return fds
}

func closeFds(fds []int) {
	for _, fd := range fds {
		_ = unix.Close(fd)
	}
}

// shmFrame maps the rings a Shm frame announces. Called by the reader
// before Start.
func (s *Session) shmFrame(body []byte) error {
	fds := s.shm.fds
	s.shm.fds = nil
	defer closeFds(fds) // a mapping keeps its ring; the files are not needed
	m, err := proto.DecodeShm(body)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrProtocol, err)
	}
	if len(m.Rings) != len(fds) || s.shm.pending != nil {
		return fmt.Errorf("%w: %d rings announced, %d files passed", ErrProtocol, len(m.Rings), len(fds))
	}
	s.shm.pending = map[shmKey]*shm.Ring{}
	for i, r := range m.Rings {
		k := shmKey{int(r.Peer), r.Dir}
		if k.peer >= s.size || k.peer == s.rank || s.shm.pending[k] != nil {
			return fmt.Errorf("%w: ring for rank %d", ErrProtocol, k.peer)
		}
		ring, err := shm.Map(fds[i])
		if err != nil {
			return fmt.Errorf("%w: ring for rank %d: %w", ErrProtocol, k.peer, err)
		}
		s.shm.pending[k] = ring
	}
	go s.shmCleanup()
	return nil
}

// shmOn makes the named peers' rings live and starts their readers. Called
// by the reader before Start, so sends (after Init) see s.shm.out set.
func (s *Session) shmOn(body []byte) error {
	m, err := proto.DecodeShmOn(body)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrProtocol, err)
	}
	if s.shm.out != nil {
		return fmt.Errorf("%w: second shmon", ErrProtocol)
	}
	if s.shm.cmaMin, err = cmaMinFromEnv(); err != nil {
		return err
	}
	s.shm.out, s.shm.in = make([]*shm.Ring, s.size), make([]*inRing, s.size)
	s.shm.cmaOff = make([]atomic.Bool, s.size)
	for _, p := range m.Peers {
		out, in := s.shm.pending[shmKey{int(p), proto.RingOut}], s.shm.pending[shmKey{int(p), proto.RingIn}]
		if out == nil || in == nil || s.shm.in[p] != nil {
			return fmt.Errorf("%w: shmon names rank %d without its rings", ErrProtocol, p)
		}
		s.shm.out[p], s.shm.in[p] = out, &inRing{src: int(p), r: in}
		s.shm.list = append(s.shm.list, s.shm.in[p])
		delete(s.shm.pending, shmKey{int(p), proto.RingOut})
		delete(s.shm.pending, shmKey{int(p), proto.RingIn})
	}
	for _, r := range s.shm.pending { // rings with peers that went through the agent
		r.Unmap()
	}
	s.shm.pending = nil
	s.shm.poll = shmPollTime
	if s.localRanks() > runtime.GOMAXPROCS(0) {
		// More ranks here than cores for them (GOMAXPROCS counts what the
		// job's cgroup and the affinity allow): a rank that polls holds
		// the core the rank it waits for needs, so it sleeps at once.
		s.shm.poll = 0
		for _, ir := range s.shm.list {
			ir.r.CapPolls(0)
			s.shm.out[ir.src].CapPolls(0)
		}
	}
	for _, ir := range s.shm.list {
		s.shm.readers.Add(1)
		go s.shmReadLoop(ir)
	}
	return nil
}

// localRanks is the number of ranks on this rank's agent.
func (s *Session) localRanks() int {
	k := 0
	for _, h := range s.hostOf {
		if h == s.hostOf[s.rank] {
			k++
		}
	}
	return k
}

// shmCleanup unmaps the rings once the session ended (the reader
// goroutine, which alone touches pending, has ended too): the ring readers
// are woken and waited for, a writer still in a ring sees the session dead.
func (s *Session) shmCleanup() {
	<-s.dead
	for _, r := range s.shm.pending { // the session ended before ShmOn
		r.Unmap()
	}
	s.shm.pending = nil
	for _, ir := range s.shm.list {
		ir.r.CloseRead() // writers drop what they write to a rank that is gone
		ir.r.WakeReader()
	}
	s.shm.readers.Wait()
	s.shm.mu.Lock() // waits for receives still polling
	defer s.shm.mu.Unlock()
	s.shm.closed = true
	for _, ir := range s.shm.list {
		ir.r.Unmap()
	}
	for _, r := range s.shm.out {
		if r != nil {
			r.Unmap()
		}
	}
}

// alive is the check a wait on a ring makes: the session's end.
func (s *Session) alive() error {
	select {
	case <-s.dead:
		return s.deadErr()
	default:
		return nil
	}
}

// inRing is an incoming ring and its reading state. Whoever holds mu reads
// the ring: its standby reader goroutine (shmReadLoop), or a receive that
// polls it (shmPoll). Frames are read whole by one holder, so the stream
// and the per-source state of the matching engine see one reader at a time.
type inRing struct {
	src  int
	r    *shm.Ring
	mu   sync.Mutex
	next uint64 // the sequence number src's next message must carry; guarded by mu
	bad  bool   // a read failed: nobody reads the ring again; guarded by mu

	// Rendezvous (shm_cma.go), guarded by mu: the last token, the
	// writer's pid once checked, and whether the check failed.
	token uint64
	pid   int
	noCma bool

	eng engineFrame // a frame the exchange engine began reading (shm_engine.go); guarded by mu
}

// stamp does to a header read from the ring what the agent does to one it
// relays: the source is the ring's writer, sequence numbers follow each
// other. mu is held.
func (ir *inRing) stamp(h *proto.MsgHeader) error {
	h.Src = uint32(ir.src)
	if h.Offset == 0 {
		if h.Seq != ir.next {
			return fmt.Errorf("%w: message %d from rank %d, expected %d", ErrProtocol, h.Seq, ir.src, ir.next)
		}
		ir.next++
	}
	return nil
}

// shmDrain reads whole frames from the ring while it has data, until stop
// (if not nil) has completed, counting them in count. mu is held. An error
// ends the job (the peer broke the rules, or the session ended) and marks
// the ring bad.
func (s *Session) shmDrain(ir *inRing, stop *Request, count *atomic.Int64) error {
	if ir.bad {
		return ErrProtocol
	}
	// The stop comes first: the next record's line is the writer's
	// (it zeroed it), and reading it costs the receive a cache miss.
	for stop == nil || !stop.completed() {
		if !ir.r.Pending() {
			return nil
		}
		if err := s.shmReadMsg(ir, count); err != nil {
			return s.ringFailed(ir, err)
		}
	}
	return nil
}

// ringFailed marks ir bad after a read failed with err, and ends the job
// unless the session ended anyway: at once when the peer broke the rules,
// and only if the agent does not fail the job first when the peer's
// process is gone (cmaGone). It returns err. mu is held.
func (s *Session) ringFailed(ir *inRing, err error) error {
	ir.bad = true
	if cmaGone(err) {
		go s.refuseUnlessFailed(ir.src, err)
	} else if s.alive() == nil {
		s.shmRefuse(ir.src, err)
	}
	return err
}

// shmReadMsg reads one MSG frame from the ring, checked like one from the
// agent's socket and stamped as the agent would (stamp), and counts it in
// count. It reads the ring directly, not through an io.Reader, so a small
// message costs no allocation here. mu is held.
func (s *Session) shmReadMsg(ir *inRing, count *atomic.Int64) error {
	var hb [proto.HeaderLen + proto.MsgHeaderLen]byte
	if err := ir.readFull(hb[:proto.HeaderLen], s.alive); err != nil {
		return err
	}
	typ, n, err := proto.ParseHeader(hb[:proto.HeaderLen], proto.MsgHeaderLen+s.maxData)
	if err == nil && (typ == proto.TypeMsg || typ == proto.TypeCma) {
		count.Add(1) // before its message can complete a receive, whose program may then read the counts
	}
	switch {
	case err != nil:
		return fmt.Errorf("%w: %w", ErrProtocol, err)
	case typ == proto.TypeCma:
		return s.shmReadCma(ir, n)
	case typ != proto.TypeMsg:
		return fmt.Errorf("%w: frame type %d", ErrProtocol, typ)
	case n < proto.MsgHeaderLen:
		return fmt.Errorf("%w: msg of %d bytes", ErrProtocol, n)
	}
	if err := ir.readFull(hb[proto.HeaderLen:], s.alive); err != nil {
		return err
	}
	dataLen := n - proto.MsgHeaderLen
	h, err := proto.DecodeMsgHeader(hb[proto.HeaderLen:], dataLen)
	if err == nil {
		err = ir.stamp(&h)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrProtocol, err)
	}
	if h.Offset == 0 && uint64(dataLen) == h.Total && dataLen <= wholeMax && ir.r.Rest() >= dataLen {
		return s.shmReadWhole(ir, &h, dataLen)
	}
	in, dst, err := s.place(&h, dataLen)
	if err != nil {
		return err
	}
	if err := ir.readFull(dst, s.alive); err != nil {
		return err
	}
	if h.Last(dataLen) {
		s.arrived(in)
	}
	return nil
}

// wholeMax bounds the messages shmReadWhole copies under the session's
// lock, which receives being posted wait for.
const wholeMax = 4 << 10

// shmReadWhole receives a small message whose data lies whole in the
// record being read (written with its header as one record): matched,
// copied and marked arrived under one hold of the session's lock, where
// place and arrived take it twice on a small message's path. mu is held.
func (s *Session) shmReadWhole(ir *inRing, h *proto.MsgHeader, dataLen int) error {
	if err := s.checkMsg(h); err != nil {
		return err
	}
	s.mu.Lock()
	in, err := s.firstFragment(h, dataLen)
	if err != nil {
		s.mu.Unlock()
		return err
	}
	r := in.recv
	if r != nil && len(r.buf) >= dataLen {
		in.buf, in.direct = r.buf, true
	} else {
		in.buf = make([]byte, dataLen)
	}
	// The record holds the data: this read does not wait.
	err = ir.readFull(in.buf[:dataLen], s.alive)
	in.done = err == nil
	s.mu.Unlock()
	if err != nil {
		return err
	}
	if r != nil {
		finishRecv(r, in)
	}
	return nil
}

// readFull fills p from the ring, waiting for data as long as check
// returns nil. mu is held.
func (ir *inRing) readFull(p []byte, check func() error) error {
	for len(p) > 0 {
		n, err := ir.r.Read(p, check)
		if err != nil {
			return err
		}
		p = p[n:]
	}
	return nil
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// shmReadLoop is an incoming ring's standby reader: it reads what rank src
// writes while no receive polls the ring, as the session's reader does for
// the agent's socket, so the ring drains even when the program is busy
// elsewhere.
func (s *Session) shmReadLoop(ir *inRing) {
	defer s.shm.readers.Done()
	for {
		err := ir.r.WaitData(s.alive)
		if err == nil {
			ir.mu.Lock()
			err = s.shmDrain(ir, nil, &s.shm.standby)
			ir.mu.Unlock()
			// A receive this drain completed waits in this thread's queue;
			// yield so it runs here now, rather than when another thread
			// wakes for it (a core away on a full machine) or after the
			// futex sleep below has kept this P for up to sysmon's 10 ms.
			runtime.Gosched()
		} else if s.alive() == nil {
			ir.mu.Lock()
			ir.bad = true
			ir.mu.Unlock()
			s.shmRefuse(ir.src, err)
		}
		if err != nil {
			return
		}
	}
}

// shmPollTime bounds how long a blocked receive polls its rings before it
// sleeps until the standby reader completes it: an idle rank must not keep
// a core that its owner only lends.
const shmPollTime = 50 * time.Microsecond

// shmPoll is the start of a receive's wait: when its source (or, for
// AnySource, any source) is a rank with a ring, the waiting goroutine reads
// the ring(s) itself for up to shmPollTime (s.shm.poll), so a message is matched and
// copied by the thread that waits for it, without the wake-up of another.
// It returns when req completes, the session ends, or the time is up.
func (s *Session) shmPoll(req *Request, src int) {
	rings := s.shm.list
	if src != AnySource {
		if s.shm.in == nil || src < 0 || src >= len(s.shm.in) || s.shm.in[src] == nil {
			return
		}
		rings = s.shm.in[src : src+1]
	}
	if len(rings) == 0 || req.completed() {
		return
	}
	s.shm.mu.RLock()
	defer s.shm.mu.RUnlock()
	if s.shm.closed || s.shmLook(req, rings, false) { // the message may be there already
		return
	}
	for _, ir := range rings {
		ir.r.Watch()
	}
	defer func() {
		for _, ir := range rings {
			ir.r.Unwatch()
		}
	}()
	// The poll yields now and then, as the machine's load asks, to let the
	// program's other goroutines and the peer run (shm.Poller).
	for p := shm.StartPoll(s.shm.poll); p.Next(); {
		if s.shmLook(req, rings, true) {
			return
		}
	}
}

// shmLook is one look of a poll: it reads what the rings hold (those no
// other goroutine reads now) and reports whether the poll is over: req
// completed, a ring failed, or the session ended. watching: the rings are
// watched, and unwatched when the poll ends.
func (s *Session) shmLook(req *Request, rings []*inRing, watching bool) bool {
	for _, ir := range rings {
		if ir.r.Pending() && ir.mu.TryLock() {
			if watching {
				ir.r.PrepareUnwatch()
			}
			err := s.shmDrain(ir, req, &s.shm.polled)
			ir.mu.Unlock()
			if err != nil {
				return true
			}
		}
	}
	return req.completed() || isClosed(s.dead)
}

// abortWait is how long a rank that refused a ring waits for the agent's
// answer to its abort before it closes the connection itself.
const abortWait = 5 * time.Second

// shmRefuse ends the job because rank peer wrote what the rules forbid
// into a ring they share: this rank aborts with the reason, so every rank
// learns it.
func (s *Session) shmRefuse(peer int, err error) {
	reason := fmt.Sprintf("rank %d refused what rank %d wrote into their shared memory: %v", s.rank, peer, err)
	s.finalOnce.Do(func() {
		a := proto.Abort{Code: 1, Reason: reason}
		shut := &JobError{Cause: "aborted", Rank: s.rank, Code: 1, Reason: reason}
		r := s.postControl(a.Encode(), shut, true)
		go func() {
			// The agent answers with the job's failure and closes; closing
			// first could make it see a lost rank before it reads the
			// abort, and lose the reason.
			_, _ = r.Wait()
			t := time.NewTimer(abortWait)
			defer t.Stop()
			select {
			case <-s.dead:
			case <-t.C:
				_ = s.conn.Close()
			}
		}()
	})
}

// shmWrite writes a message into the destination's ring if it has one. ok
// is false when the message goes through the agent.
func (s *Session) shmWrite(sr *sendReq) (ok bool, err error) {
	if s.shm.out == nil || s.shm.out[sr.h.Dst] == nil {
		return false, nil
	}
	s.shm.mu.RLock()
	defer s.shm.mu.RUnlock()
	if s.shm.closed {
		return true, s.alive()
	}
	r := s.shm.out[sr.h.Dst]
	sr.h.Src = uint32(s.rank)
	if ok, err := s.cmaWrite(r, sr); ok {
		return true, err
	}
	hdr := make([]byte, proto.HeaderLen+proto.MsgHeaderLen)
	total := len(sr.data)
	for off := 0; ; {
		n := min(s.maxData, total-off)
		sr.h.Offset = uint64(off)
		proto.PutMsgFrame(hdr, &sr.h, n)
		if err := r.WriteFrame(hdr, sr.data[off:off+n], s.alive); err != nil {
			return true, s.shmWriteErr(int(sr.h.Dst), err)
		}
		if off += n; off >= total {
			return true, nil
		}
	}
}

func (s *Session) shmWriteErr(dst int, err error) error {
	if errors.Is(err, shm.ErrCorrupt) {
		go s.shmRefuse(dst, err)
		return fmt.Errorf("%w: %w", ErrProtocol, err)
	}
	return err
}

// shmAll reports whether every other rank of c is reached through a ring
// (all of c's ranks share this rank's agent and have rings).
func (c *Comm) shmAll() bool {
	out := c.s.shm.out
	if out == nil || c.size < 2 {
		return false
	}
	for r := 0; r < c.size; r++ {
		if r != c.rank && out[c.worldRank(r)] == nil {
			return false
		}
	}
	return true
}
