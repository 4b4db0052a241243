package mpi

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
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
// (fragments, sequence numbers and all), and one reader goroutine per
// incoming ring feeds the same matching engine as the agent's socket: the
// program cannot tell the paths apart. Everything read from a ring is
// checked like bytes from the network (the source is stamped from the ring,
// sequence numbers must follow each other); a peer that breaks the rules
// makes this rank abort the job with the reason, and never crashes it.
// Failures still travel through the agent: a peer that dies is noticed by
// the agent at once, and its Fail ends the waits on rings too.

// shmState is a session's rings.
type shmState struct {
	fds     []int                // ring files from the first read, until the Shm frame claims them (reader goroutine)
	pending map[shmKey]*shm.Ring // mapped rings, until ShmOn says which are live (reader goroutine)
	mu      sync.RWMutex         // held shared while writing to an out ring; exclusively to unmap
	out     []*shm.Ring          // by destination rank; set before Start, read-only until unmapped
	in      []*shm.Ring          // by source rank; set before Start
	closed  bool                 // rings unmapped; guarded by mu
	readers sync.WaitGroup       // the ring reader goroutines
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
	s.shm.out, s.shm.in = make([]*shm.Ring, s.size), make([]*shm.Ring, s.size)
	for _, p := range m.Peers {
		out, in := s.shm.pending[shmKey{int(p), proto.RingOut}], s.shm.pending[shmKey{int(p), proto.RingIn}]
		if out == nil || in == nil || s.shm.in[p] != nil {
			return fmt.Errorf("%w: shmon names rank %d without its rings", ErrProtocol, p)
		}
		s.shm.out[p], s.shm.in[p] = out, in
		delete(s.shm.pending, shmKey{int(p), proto.RingOut})
		delete(s.shm.pending, shmKey{int(p), proto.RingIn})
	}
	for _, r := range s.shm.pending { // rings with peers that went through the agent
		r.Unmap()
	}
	s.shm.pending = nil
	for src, r := range s.shm.in {
		if r != nil {
			s.shm.readers.Add(1)
			go s.shmReadLoop(src, r)
		}
	}
	return nil
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
	for _, r := range s.shm.in {
		if r != nil {
			r.CloseRead() // writers drop what they write to a rank that is gone
			r.WakeReader()
		}
	}
	s.shm.readers.Wait()
	s.shm.mu.Lock()
	defer s.shm.mu.Unlock()
	s.shm.closed = true
	for _, r := range append(s.shm.in, s.shm.out...) {
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

// ringReader reads a ring as a stream.
type ringReader struct {
	r     *shm.Ring
	check func() error
}

func (rr ringReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return rr.r.Read(p, rr.check)
}

// shmReadLoop reads what rank src writes into its ring, as the session's
// reader does for the agent's socket.
func (s *Session) shmReadLoop(src int, r *shm.Ring) {
	defer s.shm.readers.Done()
	rr := ringReader{r: r, check: s.alive}
	var next uint64 // the sequence number src's next message must carry
	stamp := func(h *proto.MsgHeader) error {
		h.Src = uint32(src) // what the agent does: a ring has one writer
		if h.Offset == 0 {
			if h.Seq != next {
				return fmt.Errorf("%w: message %d from rank %d, expected %d", ErrProtocol, h.Seq, src, next)
			}
			next++
		}
		return nil
	}
	var hdr [proto.HeaderLen]byte
	limit := proto.MsgHeaderLen + s.maxData
	for {
		typ, n, err := proto.ReadHeader(rr, &hdr, limit)
		if err == nil && typ != proto.TypeMsg {
			err = fmt.Errorf("%w: frame type %d", ErrProtocol, typ)
		}
		if err == nil {
			err = s.readMsg(rr, n, stamp)
		}
		if err != nil {
			if s.alive() == nil {
				s.shmRefuse(src, err)
			}
			return
		}
	}
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

var _ io.Reader = ringReader{}
