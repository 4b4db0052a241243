package router

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/mpi/internal/proto"
)

var (
	errLinkDown    = errors.New("router: link down")
	errRemoteEnded = errors.New("router: job ended at the remote agent")
)

// link is this agent's stream to one remote agent for one job. It carries
// MSG frames one way, within a window of credit the remote gives back as it
// hands frames to its ranks, and pings when idle; the remote answers with
// Credit and Pong frames. Either side failing to hear the other within the
// heartbeat timeout counts the other as lost.
type link struct {
	j     *Job
	peer  peer.ID
	ready chan struct{} // closed when the open finished
	err   error         // why the open failed; set before ready is closed
	s     network.Stream
	br    *bufio.Reader
	done  chan struct{} // closed when the reader ends

	wmu sync.Mutex // serializes writes to s

	cmu    sync.Mutex // guards credit, more, gone
	credit int
	more   chan struct{} // closed (and replaced) when credit grows or the link ends
	gone   bool          // the remote ended the job cleanly: sends are dropped
}

// linkTo returns the link to h, opening it on first use.
func (j *Job) linkTo(h peer.ID) *link {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.linkLocked(h)
}

func (j *Job) linkLocked(h peer.ID) *link {
	if l := j.links[h]; l != nil {
		return l
	}
	l := &link{j: j, peer: h, ready: make(chan struct{}), done: make(chan struct{}), more: make(chan struct{})}
	j.links[h] = l
	if j.removed {
		l.err = errJobOver
		close(l.ready)
		close(l.done)
		return l
	}
	j.wg.Add(1)
	go l.run()
	return l
}

func (l *link) run() {
	defer l.j.wg.Done()
	defer close(l.done)
	if err := l.open(); err != nil {
		l.err = err
		close(l.ready)
		switch {
		case errors.Is(err, errRemoteEnded):
			l.j.remoteEnded(l.peer)
		case l.j.ctx.Err() == nil:
			l.j.peerLost(l.peer, err)
		}
		return
	}
	close(l.ready)
	if l.j.ctx.Err() != nil { // the job ended while opening; shutdown may have missed the stream
		l.shutdown(l.j.farewell())
		return
	}
	l.j.wg.Add(1) // safe: this goroutine's own count keeps the group above zero
	go l.pinger()
	l.readLoop()
}

// open opens the stream and exchanges Open and Accept.
func (l *link) open() error {
	cfg := l.j.cfg
	ctx, cancel := context.WithTimeout(l.j.ctx, cfg.OpenTimeout)
	defer cancel()
	s, err := l.dial(ctx)
	if err != nil {
		return fmt.Errorf("open link to %s: %w", l.peer.ShortString(), err)
	}
	_ = s.SetDeadline(time.Now().Add(cfg.OpenTimeout))
	br := bufio.NewReaderSize(s, 64<<10)
	a, err := handshakeLink(s, br, l.j.spec)
	if err != nil {
		_ = s.Reset()
		return fmt.Errorf("open link to %s: %w", l.peer.ShortString(), err)
	}
	if int(a.Window) < 2*cfg.frameMax() || int(a.MaxData) < cfg.MaxData {
		_ = s.Reset()
		return fmt.Errorf("open link to %s: its window %d and fragment size %d do not fit ours (%d)",
			l.peer.ShortString(), a.Window, a.MaxData, cfg.MaxData)
	}
	_ = s.SetDeadline(time.Time{})
	l.s, l.br, l.credit = s, br, int(a.Window)
	return nil
}

// dial opens the stream, retrying until ctx ends: when two agents dial each
// other at the same moment one dial can fail (TCP simultaneous open), and a
// job must not fail for that. Retries bypass the swarm's dial backoff.
func (l *link) dial(ctx context.Context) (network.Stream, error) {
	wait := 20 * time.Millisecond
	for {
		s, err := l.j.r.h.NewStream(ctx, l.peer, ProtocolID)
		if err == nil {
			return s, nil
		}
		log.Debugf("job %s: dial %s: %v", l.j.spec.ID, l.peer.ShortString(), err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
		wait = min(2*wait, 500*time.Millisecond)
		ctx = network.WithForceDirectDial(ctx, "zorilla mpi link retry")
	}
}

// handshakeLink sends Open and reads the answer.
func handshakeLink(s network.Stream, br *bufio.Reader, spec JobSpec) (proto.Accept, error) {
	open := proto.Open{Version: proto.Version, Job: spec.ID, Key: spec.Key}
	if _, err := s.Write(open.Encode()); err != nil {
		return proto.Accept{}, err
	}
	f, err := proto.ReadFrame(br, proto.MaxControl)
	if err != nil {
		return proto.Accept{}, err
	}
	switch f.Type() {
	case proto.TypeAccept:
		return proto.DecodeAccept(f.Body())
	case proto.TypeRefused:
		r, err := proto.DecodeRefused(f.Body())
		if err != nil {
			return proto.Accept{}, err
		}
		if r.Code == proto.RefuseEnded {
			return proto.Accept{}, errRemoteEnded
		}
		return proto.Accept{}, fmt.Errorf("refused: %s", r.Reason)
	}
	return proto.Accept{}, fmt.Errorf("%w: frame type %d instead of accept", proto.ErrMalformed, f.Type())
}

// send forwards one MSG frame, waiting for window credit.
func (l *link) send(f proto.Frame) error {
	select {
	case <-l.ready:
	case <-l.j.ctx.Done():
		return errJobOver
	}
	if l.err != nil {
		return l.err
	}
	l.cmu.Lock()
	for !l.gone && l.credit < len(f) {
		more := l.more
		l.cmu.Unlock()
		select {
		case <-more:
		case <-l.done:
			return errLinkDown
		case <-l.j.ctx.Done():
			return errJobOver
		}
		l.cmu.Lock()
	}
	if l.gone {
		l.cmu.Unlock()
		return nil
	}
	l.credit -= len(f)
	l.cmu.Unlock()
	return l.write(f)
}

// write writes one frame within the heartbeat timeout. A failed write
// breaks the link and counts the remote as lost.
func (l *link) write(f proto.Frame) error {
	l.wmu.Lock()
	_ = l.s.SetWriteDeadline(time.Now().Add(l.j.cfg.HeartbeatTimeout))
	_, err := l.s.Write(f)
	l.wmu.Unlock()
	if err != nil {
		_ = l.s.Reset()
		if l.j.ctx.Err() == nil {
			l.j.peerLost(l.peer, fmt.Errorf("write to %s: %w", l.peer.ShortString(), err))
		}
	}
	return err
}

// pinger keeps the link from looking silent.
func (l *link) pinger() {
	defer l.j.wg.Done()
	t := time.NewTicker(l.j.cfg.HeartbeatInterval)
	defer t.Stop()
	ping := proto.NewFrame(proto.TypePing, 0)
	for {
		select {
		case <-t.C:
			if l.write(ping) != nil {
				return
			}
		case <-l.done:
			return
		case <-l.j.ctx.Done():
			return
		}
	}
}

// readLoop reads what the remote sends back: credit, pongs, a failure, or
// the end of the job there.
func (l *link) readLoop() {
	for {
		_ = l.s.SetReadDeadline(time.Now().Add(l.j.cfg.HeartbeatTimeout))
		f, err := proto.ReadFrame(l.br, proto.MaxControl)
		if err != nil {
			l.broken(fmt.Errorf("link to %s: %w", l.peer.ShortString(), err))
			return
		}
		switch f.Type() {
		case proto.TypeCredit:
			n, err := proto.DecodeU32(f.Body())
			if err != nil {
				l.broken(err)
				return
			}
			l.addCredit(int(n))
		case proto.TypePong:
		case proto.TypeFail:
			l.j.remoteFail(l.peer, f.Body())
		case proto.TypeBye:
			l.markGone()
			l.j.remoteEnded(l.peer)
			return
		default:
			l.broken(fmt.Errorf("link to %s: unexpected frame type %d", l.peer.ShortString(), f.Type()))
			return
		}
	}
}

func (l *link) broken(err error) {
	_ = l.s.Reset()
	if l.j.ctx.Err() == nil {
		l.j.peerLost(l.peer, err)
	}
}

func (l *link) addCredit(n int) {
	l.cmu.Lock()
	l.credit += n
	close(l.more)
	l.more = make(chan struct{})
	l.cmu.Unlock()
}

// markGone makes later sends drop their frames.
func (l *link) markGone() {
	l.cmu.Lock()
	if !l.gone {
		l.gone = true
		close(l.more)
		l.more = make(chan struct{})
	}
	l.cmu.Unlock()
}

// control writes a control frame (Fail) if the link is or gets open within
// a heartbeat timeout (if it does not, the remote notices the silence).
func (l *link) control(f proto.Frame) {
	t := time.NewTimer(min(l.j.cfg.OpenTimeout, l.j.cfg.HeartbeatTimeout))
	defer t.Stop()
	select {
	case <-l.ready:
	case <-t.C:
		return
	}
	if l.err == nil {
		_ = l.write(f)
	}
}

// shutdown ends the link with a last frame (Bye, or the job's failure).
func (l *link) shutdown(last proto.Frame) {
	select {
	case <-l.ready:
	default:
		return // still opening: run sees the job's cancelled context and ends it
	}
	if l.err != nil {
		return
	}
	l.wmu.Lock()
	_ = l.s.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = l.s.Write(last)
	l.wmu.Unlock()
	_ = l.s.Close()
}
