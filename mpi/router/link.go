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

	"github.com/zorilla-p2p/zorilla/internal/clock"
	"github.com/zorilla-p2p/zorilla/mpi/internal/proto"
)

var (
	errLinkDown    = errors.New("router: link down")
	errRemoteEnded = errors.New("router: job ended at the remote agent")
	errFenced      = errors.New("router: the job's other agents counted this agent lost")
	errMismatch    = errors.New("router: link settings do not fit")
	errGone        = errors.New("router: the remote agent left the job (the others counted it lost)")
)

// link is this agent's stream to one remote agent for one job. It carries
// MSG frames (and acknowledgements, copy losses and failures) one way,
// within a window of credit the remote gives back as it hands frames to its
// ranks, and pings when idle; the remote answers with Credit and Pong.
//
// A broken stream is not proof that the remote is gone: the link opens a
// new one and resends from the local copies' logs what the remote has not
// acknowledged (its sequencers drop the rest), until the job's watch loop
// counts the remote lost (nothing heard from it for its timeout: watch.go)
// and cuts the link.
type link struct {
	j    *Job
	peer peer.ID
	done chan struct{}      // closed when run ends: the link is over for good
	ctx  context.Context    // ends when the link is over (or the job): stops an open under way
	stop context.CancelFunc // ends ctx

	wmu sync.Mutex    // serializes writes to the stream
	wdl writeDeadline // the stream's write deadline; wmu guards it

	cmu    sync.Mutex // guards everything below
	s      network.Stream
	up     bool // s is open and what was in flight is resent: sends may go
	credit int
	more   chan struct{} // closed (and replaced) when credit grows or the state changes
	gone   bool          // the remote ended the job cleanly: sends are dropped
	err    error         // set when the link is over for good
	rtt    rttEstimate   // of pings answered by pongs
	pinged time.Time     // when the oldest unanswered ping left, or zero
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
	l := &link{j: j, peer: h, done: make(chan struct{}), more: make(chan struct{})}
	l.ctx, l.stop = context.WithCancel(j.ctx)
	j.links[h] = l
	if j.removed {
		l.err = errJobOver
		l.stop()
		close(l.done)
		return l
	}
	j.wg.Add(1)
	go l.run()
	return l
}

// run opens the stream, and opens it again each time it breaks, until the
// link is over: the job ended, the remote ended it, or the remote was
// counted lost (by the watch loop, or here when it was never reachable).
func (l *link) run() {
	defer l.j.wg.Done()
	defer close(l.done)
	l.j.wg.Add(1)
	go l.pinger()
	wait := 20 * time.Millisecond
	for {
		err := l.session()
		switch {
		case l.j.ctx.Err() != nil:
			l.over(errJobOver)
			return
		case l.isOver(): // the remote was counted lost meanwhile
			return
		case err == nil: // the remote ended the job cleanly
			l.over(errRemoteEnded)
			l.j.remoteEnded(l.peer)
			return
		case errors.Is(err, errRemoteEnded):
			l.over(err)
			l.j.remoteEnded(l.peer)
			return
		case errors.Is(err, errFenced):
			l.over(err)
			l.j.fenced(l.peer)
			return
		case errors.Is(err, errMismatch) || errors.Is(err, errGone) || !l.everUp():
			l.over(err)
			l.j.peerLost(l.peer, err)
			return
		}
		log.Infof("job %s: link to %s broke, opening it again: %v", l.j.spec.ID, l.peer.ShortString(), err)
		if clock.Sleep(l.ctx, wait) != nil {
			if !l.isOver() {
				l.over(errJobOver)
			}
			return
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}

// session opens one stream, resends what the remote lacks, and reads the
// remote's answers until the stream ends: nil when the remote ended the
// job cleanly, else why it broke.
func (l *link) session() error {
	s, br, window, err := l.open()
	if err != nil {
		return err
	}
	l.j.heardFrom(l.peer)
	l.cmu.Lock()
	l.s, l.credit, l.up = s, window, false
	l.cmu.Unlock()
	if l.j.ctx.Err() != nil { // the job ended while opening; shutdown may have missed the stream
		l.shutdown(l.j.farewell())
		return errJobOver
	}
	if l.isOver() { // the remote was counted lost while opening; cut may have missed the stream
		_ = s.Reset()
		return errLinkDown
	}
	read := make(chan error, 1)
	go func() { read <- l.readLoop(s, br) }()
	if err := l.j.resendTo(l, s); err == nil {
		l.setUp(s)
	} else {
		_ = s.Reset()
	}
	err = <-read
	l.cmu.Lock()
	if l.s == s {
		l.up = false
		l.signal()
	}
	l.cmu.Unlock()
	return err
}

// open opens a stream and exchanges Open and Accept, trying again for
// Config.OpenTimeout at most (or until the link is over).
func (l *link) open() (network.Stream, *bufio.Reader, int, error) {
	cfg := l.j.cfg
	deadline := time.Now().Add(cfg.OpenTimeout)
	ctx, cancel := context.WithDeadline(l.ctx, deadline)
	defer cancel()
	s, err := l.dial(ctx)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("open link to %s: %w", l.peer.ShortString(), err)
	}
	_ = s.SetDeadline(deadline)
	br := bufio.NewReaderSize(s, 64<<10)
	a, err := handshakeLink(s, br, l.j.spec)
	if err != nil {
		_ = s.Reset()
		return nil, nil, 0, fmt.Errorf("open link to %s: %w", l.peer.ShortString(), err)
	}
	if int(a.Window) < 2*cfg.frameMax() || int(a.MaxData) < cfg.MaxData {
		_ = s.Reset()
		return nil, nil, 0, fmt.Errorf("open link to %s: %w: its window %d and fragment size %d, our fragments %d",
			l.peer.ShortString(), errMismatch, a.Window, a.MaxData, cfg.MaxData)
	}
	_ = s.SetDeadline(time.Time{})
	return s, br, int(a.Window), nil
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
		switch r.Code {
		case proto.RefuseEnded:
			return proto.Accept{}, errRemoteEnded
		case proto.RefuseFenced:
			return proto.Accept{}, errFenced
		case proto.RefuseGone:
			return proto.Accept{}, errGone
		}
		return proto.Accept{}, fmt.Errorf("refused: %s", r.Reason)
	}
	return proto.Accept{}, fmt.Errorf("%w: frame type %d instead of accept", proto.ErrMalformed, f.Type())
}

// send forwards one MSG frame once the link is up, within its window. A
// frame written to a stream that then breaks is not lost: it is in its
// sender's log, and the next stream starts with what the remote lacks.
func (l *link) send(f proto.Frame) error {
	l.cmu.Lock()
	for {
		switch {
		case l.err != nil:
			err := l.err
			l.cmu.Unlock()
			return err
		case l.gone:
			l.cmu.Unlock()
			return nil
		case l.up && l.credit >= len(f):
			l.credit -= len(f)
			s := l.s
			l.cmu.Unlock()
			l.j.r.countSent(f)
			_ = l.write(s, f)
			return nil
		}
		more := l.more
		l.cmu.Unlock()
		select {
		case <-more:
		case <-l.j.ctx.Done():
			return errJobOver
		}
		l.cmu.Lock()
	}
}

// resend writes a frame on stream s during its start, within its window.
func (l *link) resend(s network.Stream, f proto.Frame) error {
	l.cmu.Lock()
	for l.s == s && l.err == nil && !l.gone && l.credit < len(f) {
		more := l.more
		l.cmu.Unlock()
		select {
		case <-more:
		case <-l.j.ctx.Done():
			return errJobOver
		}
		l.cmu.Lock()
	}
	if l.s != s || l.err != nil || l.gone {
		l.cmu.Unlock()
		return errLinkDown
	}
	l.credit -= len(f)
	l.cmu.Unlock()
	l.j.r.countSent(f)
	return l.write(s, f)
}

// write writes one frame on stream s within one to one and a half heartbeat
// timeouts (writeDeadline). A failed write resets the stream; its reader
// then sees it broken.
func (l *link) write(s network.Stream, f proto.Frame) error {
	l.wmu.Lock()
	l.wdl.arm(s, l.j.cfg.HeartbeatTimeout)
	_, err := s.Write(f)
	l.wmu.Unlock()
	if err != nil {
		_ = s.Reset()
	}
	return err
}

// pinger keeps the link from looking silent while it is up.
func (l *link) pinger() {
	defer l.j.wg.Done()
	t := time.NewTicker(l.j.cfg.HeartbeatInterval)
	defer t.Stop()
	ping := proto.NewFrame(proto.TypePing, 0)
	for {
		select {
		case <-t.C:
			if s := l.upStream(); s != nil {
				l.cmu.Lock()
				if l.pinged.IsZero() {
					l.pinged = time.Now()
				}
				l.cmu.Unlock()
				_ = l.write(s, ping)
			}
		case <-l.done:
			return
		case <-l.j.ctx.Done():
			return
		}
	}
}

// readLoop reads what the remote sends back on stream s: credit, pongs, a
// failure, or the end of the job there (nil). The watch loop judges the
// remote's silence, and cuts the link (which ends this read) when it
// counts the remote lost. The read deadline, twice the remote's timeout,
// only makes the link open a new stream: the pinger's pings are answered
// within the timeout, so a stream that stays silent past it while the
// remote is heard on its own stream has died without a reset (its
// connection half gone), and would otherwise wait for libp2p's keepalive.
func (l *link) readLoop(s network.Stream, br *bufio.Reader) error {
	for {
		_ = s.SetReadDeadline(time.Now().Add(2 * l.timeout()))
		f, err := proto.ReadFrame(br, proto.MaxControl)
		if err != nil {
			_ = s.Reset()
			return fmt.Errorf("link to %s: %w", l.peer.ShortString(), err)
		}
		l.j.heardFrom(l.peer)
		switch f.Type() {
		case proto.TypeCredit:
			n, err := proto.DecodeU32(f.Body())
			if err != nil {
				_ = s.Reset()
				return err
			}
			l.addCredit(s, int(n))
		case proto.TypePong:
			l.cmu.Lock()
			if !l.pinged.IsZero() {
				l.rtt.add(time.Since(l.pinged))
				l.pinged = time.Time{}
			}
			l.cmu.Unlock()
		case proto.TypeFail:
			l.j.remoteFail(l.peer, f.Body())
		case proto.TypeBye:
			l.markGone()
			return nil
		default:
			_ = s.Reset()
			return fmt.Errorf("link to %s: unexpected frame type %d", l.peer.ShortString(), f.Type())
		}
	}
}

func (l *link) addCredit(s network.Stream, n int) {
	l.cmu.Lock()
	if l.s == s {
		l.credit += n
		l.signal()
	}
	l.cmu.Unlock()
}

// signal wakes whoever waits on the link's state; l.cmu is held.
func (l *link) signal() {
	close(l.more)
	l.more = make(chan struct{})
}

func (l *link) setUp(s network.Stream) {
	l.cmu.Lock()
	if l.s == s && l.err == nil {
		l.up = true
		l.signal()
	}
	l.cmu.Unlock()
}

// upStream returns the stream if the link is up, else nil.
func (l *link) upStream() network.Stream {
	l.cmu.Lock()
	defer l.cmu.Unlock()
	if !l.up || l.err != nil {
		return nil
	}
	return l.s
}

// everUp reports whether a stream was ever opened.
func (l *link) everUp() bool {
	l.cmu.Lock()
	defer l.cmu.Unlock()
	return l.s != nil
}

// timeout is how long the remote may stay silent before it counts as lost:
// the configured heartbeat timeout, or more on a path whose measured
// round-trip time and jitter make that too short (a slow or loaded host
// is not a dead one).
func (l *link) timeout() time.Duration {
	l.cmu.Lock()
	defer l.cmu.Unlock()
	return max(l.j.cfg.HeartbeatTimeout, l.rtt.bound())
}

func (l *link) isOver() bool {
	l.cmu.Lock()
	defer l.cmu.Unlock()
	return l.err != nil
}

// cut ends the link for good because its remote was counted lost: sends
// fail, and the stream is reset so that the remote, if it lives, learns it.
func (l *link) cut(err error) {
	l.over(err)
	l.cmu.Lock()
	s := l.s
	l.cmu.Unlock()
	if s != nil {
		_ = s.Reset()
	}
}

// over ends the link for good: sends fail with err, and an open under way
// stops.
func (l *link) over(err error) {
	l.cmu.Lock()
	if l.err == nil {
		l.err = err
		l.up = false
		l.signal()
	}
	l.cmu.Unlock()
	l.stop()
}

// markGone makes later sends drop their frames.
func (l *link) markGone() {
	l.cmu.Lock()
	if !l.gone {
		l.gone = true
		l.signal()
	}
	l.cmu.Unlock()
}

// control writes a control frame (Fail, Ack, CopyLost) if the link is up or
// comes up within a heartbeat timeout; if it does not, the remote notices
// the silence, and acknowledgements are sent whole again on the next stream.
func (l *link) control(f proto.Frame) {
	t := time.NewTimer(min(l.j.cfg.OpenTimeout, l.j.cfg.HeartbeatTimeout))
	defer t.Stop()
	l.cmu.Lock()
	for !l.up && l.err == nil {
		more := l.more
		l.cmu.Unlock()
		select {
		case <-more:
		case <-t.C:
			return
		case <-l.done:
			return
		}
		l.cmu.Lock()
	}
	s, ok := l.s, l.err == nil
	l.cmu.Unlock()
	if ok {
		_ = l.write(s, f)
	}
}

// shutdown ends the link with a last frame (Bye, or the job's failure).
func (l *link) shutdown(last proto.Frame) {
	l.cmu.Lock()
	s := l.s
	l.cmu.Unlock()
	if s == nil {
		return // still opening: run sees the job's cancelled context and ends it
	}
	l.wmu.Lock()
	l.wdl.set(s, time.Now().Add(time.Second))
	if last != nil {
		_, _ = s.Write(last)
	}
	l.wmu.Unlock()
	_ = s.Close()
}

// writeDeadline keeps a stream's write deadline ahead of its writes. It is
// set again only when less than the timeout is left, to one and a half
// timeouts ahead: a deadline set per frame costs a timer per message (the
// muxer arms a new one each time), which the latency path feels.
type writeDeadline struct {
	s  network.Stream
	at time.Time
}

// arm gives a write on s starting now at least d before its deadline.
func (w *writeDeadline) arm(s network.Stream, d time.Duration) {
	now := time.Now()
	if w.s == s && w.at.Sub(now) >= d {
		return
	}
	w.set(s, now.Add(d+d/2))
}

// set sets s's write deadline to at.
func (w *writeDeadline) set(s network.Stream, at time.Time) {
	w.s, w.at = s, at
	_ = s.SetWriteDeadline(at)
}
