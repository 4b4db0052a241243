package worker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/internal/rpc"
	"github.com/zorilla-p2p/zorilla/internal/silence"
	"github.com/zorilla-p2p/zorilla/internal/wire"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// reportQueue bounds the events waiting for the stream: a process printing
// faster than the submitter reads is slowed down (its pipe fills), never
// buffered without limit.
const reportQueue = 256

// Bounds on the reports kept until the submitter acknowledges them (the
// stream's window, which the submitter checks); when they are reached no
// new report is taken until acknowledgements come, so the processes'
// output waits in their pipes.
const (
	maxUnacked      = proto.MaxUnackedReports
	maxUnackedBytes = proto.MaxUnackedBytes
)

// errRefused marks a submitter's refusal of the job's reports: it counted
// this host lost, or does not know the job.
var errRefused = errors.New("the submitter refused this host's reports")

// errSubmitterSilent is why a sink breaks a stream on which the submitter
// answered nothing for 4 beats.
var errSubmitterSilent = errors.New("nothing from the submitter")

// sink owns one job's report stream to its submitter. Its run goroutine is
// the only writer; everything else sends through events. Reports are
// numbered and kept until the submitter acknowledges them, so that when the
// stream breaks (the submitter's agent restarts, a connection drops) the
// sink opens a new one within the grace period and sends again what was
// not acknowledged; the submitter takes each report once.
type sink struct {
	open   func(ctx context.Context) (rpc.Stream, error) // a new stream, hello sent
	grace  time.Duration
	beat   time.Duration
	events chan outgoing
	retry  chan struct{} // the submitter asked to resume: reconnect now
	lost   chan struct{} // closed when the submitter is gone for good
	done   chan struct{} // closed when run has returned

	// The fence's count (fence.go): answered is when the latest message
	// the submitter answered was sent (ns since epoch, plus one; 0:
	// none), and answers gets a signal each time it moves on.
	epoch    time.Time
	answered atomic.Int64
	answers  chan struct{}

	// Owned by run.
	seq          uint64
	sentLast     bool // RepDone was taken: nothing follows it
	unacked      []outgoing
	unackedBytes int
}

// outgoing is a report on its way, with, for a sender that waits for it,
// a channel closed once the submitter acknowledged it.
type outgoing struct {
	proto.Report

	acked chan struct{}
}

// openSink opens the job's report stream to its submitter. It fails when
// the submitter cannot be reached or refuses: the job does not start.
func openSink(ctx context.Context, ep *rpc.Endpoint, hello proto.ReportHello, to peer.ID, beat, grace time.Duration) (*sink, rpc.Stream, error) {
	k := newSink(beat, grace)
	k.open = func(ctx context.Context) (rpc.Stream, error) {
		s, err := ep.Open(ctx, to, proto.ReportProtocol)
		if err != nil {
			return nil, err
		}
		if err := wire.WriteJSON(s, hello); err != nil {
			_ = s.Reset()
			return nil, fmt.Errorf("report stream hello: %w", err)
		}
		return s, nil
	}
	s, err := k.connect(ctx)
	if err != nil {
		return nil, nil, err
	}
	return k, s, nil
}

// newSink is a sink with no stream yet (open is the caller's).
func newSink(beat, grace time.Duration) *sink {
	return &sink{grace: grace, beat: beat,
		events: make(chan outgoing, reportQueue), retry: make(chan struct{}, 1),
		lost: make(chan struct{}), done: make(chan struct{}),
		epoch: time.Now(), answers: make(chan struct{}, 1)}
}

// send queues e, or reports false when the submitter is lost or ctx ends.
func (k *sink) send(ctx context.Context, e proto.Report) bool {
	select {
	case k.events <- outgoing{Report: e}:
		return true
	case <-k.lost:
		return false
	case <-ctx.Done():
		return false
	}
}

// sendAcked queues e and waits until the submitter acknowledged it; it
// reports false when the submitter is lost or ctx ends first.
func (k *sink) sendAcked(ctx context.Context, e proto.Report) bool {
	o := outgoing{Report: e, acked: make(chan struct{})}
	select {
	case k.events <- o:
	case <-k.lost:
		return false
	case <-ctx.Done():
		return false
	}
	select {
	case <-o.acked:
		return true
	case <-k.lost:
		return false
	case <-ctx.Done():
		return false
	}
}

// resume makes a sink that is reconnecting try again at once.
func (k *sink) resume() {
	select {
	case k.retry <- struct{}{}:
	default:
	}
}

// run serves stream s, and each new one after a break, until the
// submitter has acknowledged RepDone, ctx ends, or the submitter stays
// unreachable for the grace period (or refuses): then lost is closed.
func (k *sink) run(ctx context.Context, s rpc.Stream) {
	defer close(k.done)
	for {
		finished, err := k.serve(ctx, s)
		if finished {
			return
		}
		if ctx.Err() == nil && !errors.Is(err, errRefused) {
			log.Debugw("report stream broke; opening it again", "err", err)
			s, err = k.reconnect(ctx)
		}
		if err != nil || ctx.Err() != nil {
			log.Infow("submitter lost", "err", err)
			close(k.lost)
			return
		}
	}
}

// reconnect opens a new stream, trying every second (or at once on a
// resume request) until the grace period has passed.
func (k *sink) reconnect(parent context.Context) (rpc.Stream, error) {
	ctx, cancel := context.WithTimeout(parent, k.grace)
	defer cancel()
	for {
		s, err := k.connect(ctx)
		if err == nil || errors.Is(err, errRefused) {
			return s, err
		}
		t := time.NewTimer(time.Second)
		select {
		case <-t.C:
		case <-k.retry:
			t.Stop()
		case <-ctx.Done():
			t.Stop()
			if parent.Err() != nil {
				return nil, parent.Err() // the job ended here
			}
			return nil, fmt.Errorf("submitter unreachable for %v: %w", k.grace, err)
		}
	}
}

// connect opens a stream and reads the submitter's answer to the hello.
func (k *sink) connect(ctx context.Context) (rpc.Stream, error) {
	sent := k.mark(time.Now())
	s, err := k.open(ctx)
	if err != nil {
		return nil, err
	}
	_ = s.SetReadDeadline(time.Now().Add(4 * k.beat))
	var ack proto.ReportAck
	if err := wire.ReadJSON(bufio.NewReader(s), proto.MaxReplySize, &ack); err != nil {
		_ = s.Reset()
		return nil, fmt.Errorf("report stream answer: %w", err)
	}
	if ack.Refused != "" {
		_ = s.Reset()
		return nil, fmt.Errorf("%w: %s", errRefused, ack.Refused)
	}
	k.trim(ack.Seq)
	k.answer(sent)
	return s, nil
}

// mark is now on the sink's own clock, as heartbeats carry it (At).
func (k *sink) mark(now time.Time) int64 { return int64(now.Sub(k.epoch)) + 1 }

// answer records that the submitter answered a message sent at mark
// sent (a heartbeat's At it echoed, or the hello).
func (k *sink) answer(sent int64) {
	for {
		old := k.answered.Load()
		if sent <= old || sent > k.mark(time.Now()) { // stale, or not a time this sink gave
			return
		}
		if k.answered.CompareAndSwap(old, sent) {
			break
		}
	}
	select {
	case k.answers <- struct{}{}:
	default:
	}
}

// unanswered is how long, at now, the submitter has answered nothing
// sent since: from the send of the latest message it answered (from the
// sink's start before any).
func (k *sink) unanswered(now time.Time) time.Duration {
	return time.Duration(k.mark(now) - max(k.answered.Load(), 1))
}

// serve sends again what is not acknowledged, then every new report and a
// heartbeat each beat, until the stream breaks, ctx ends, or RepDone is
// acknowledged (finished). The submitter answers every heartbeat; when
// nothing of it arrived for 4 beats, counted at the beats
// (internal/silence: a beat that comes late because this agent or its
// machine stalled counts one beat), the stream is broken. A write that
// waits for the stream's window counts the same way, a beat at a time.
func (k *sink) serve(ctx context.Context, s rpc.Stream) (finished bool, err error) {
	st := k.newServed(s)
	go readAcks(s, st.acks, st.broke, &st.heard, k.answer)
	defer func() {
		if !finished {
			_ = s.Reset() // ends readAcks; after RepDone the submitter closes
		}
	}()
	for _, e := range k.unacked {
		if err := st.write(e.Report); err != nil {
			return k.ended(st, err, false)
		}
	}
	t := time.NewTicker(k.beat)
	defer t.Stop()
	for {
		if k.sentLast && len(k.unacked) == 0 {
			_ = s.Close()
			return true, nil
		}
		select {
		case e := <-k.intake():
			if err := st.write(k.number(e)); err != nil {
				return k.ended(st, err, false)
			}
		case now := <-t.C:
			if err := st.silent(now); err != nil {
				return false, err
			}
			if err := st.write(proto.Report{Kind: proto.RepHeartbeat, At: k.mark(time.Now())}); err != nil {
				return k.ended(st, err, false)
			}
		case seq := <-st.acks:
			k.trim(seq)
		case err := <-st.broke:
			// readAcks sends an ack before the end that follows it, and
			// select picks either when both are in: take the ack first.
			return k.ended(st, err, true)
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}

// intake is where serve takes new reports from: the events, while the
// stream's window has room and RepDone was not taken; nil (none) else.
func (k *sink) intake() <-chan outgoing {
	if len(k.unacked) < maxUnacked && k.unackedBytes < maxUnackedBytes && !k.sentLast {
		return k.events
	}
	return nil
}

// number gives e the next sequence number and keeps it until the
// submitter acknowledges it.
func (k *sink) number(e outgoing) proto.Report {
	k.seq++
	e.Seq = k.seq
	k.sentLast = e.Kind == proto.RepDone
	k.unacked = append(k.unacked, e)
	k.unackedBytes += len(e.Data)
	return e.Report
}

// served is one report stream as serve uses it.
type served struct {
	s     rpc.Stream
	beat  time.Duration
	acks  chan uint64
	broke chan error
	heard atomic.Int64 // when the submitter's last answer arrived (Unix ns); stamped by readAcks
	quiet *silence.Count
	w     *patientWriter
}

func (k *sink) newServed(s rpc.Stream) *served {
	start := time.Now()
	st := &served{s: s, beat: k.beat, acks: make(chan uint64, 1), broke: make(chan error, 1), quiet: silence.Since(start)}
	st.heard.Store(start.UnixNano())
	st.w = &patientWriter{s: s, beat: k.beat, silent: st.silent}
	return st
}

// silent says, at now, whether the submitter was silent for 4 beats.
func (st *served) silent(now time.Time) error {
	if d := st.quiet.Check(now, time.Unix(0, st.heard.Load()), st.beat); d >= 4*st.beat {
		return fmt.Errorf("%w for %v", errSubmitterSilent, d.Round(time.Millisecond))
	}
	return nil
}

func (st *served) write(e proto.Report) error { return wire.WriteJSON(st.w, e) }

// ended is the end of the stream, broke or failed (err): the submitter's
// last answers come before that end, and the one for RepDone makes it a
// finish, not a break to open a new stream for (a heartbeat written as
// the submitter closes after that answer fails).
func (k *sink) ended(st *served, err error, readerDone bool) (bool, error) {
	if !readerDone { // a write failed: give the reader a beat to read what came before the end
		wait := time.NewTimer(k.beat)
		select {
		case <-st.broke:
		case <-wait.C:
		}
		wait.Stop()
	}
	select {
	case seq := <-st.acks:
		k.trim(seq)
	default:
	}
	if k.sentLast && len(k.unacked) == 0 {
		_ = st.s.Close()
		return true, nil
	}
	return false, err
}

// patientWriter writes to a report stream a beat at a time: a write that
// waits longer for the stream's window goes on while silent (the count of
// the submitter's silence) says the submitter is heard from, so a stall of
// this machine, which fires every deadline at once, does not break it.
type patientWriter struct {
	s      rpc.Stream
	beat   time.Duration
	silent func(now time.Time) error
}

func (w *patientWriter) Write(p []byte) (int, error) {
	done := 0
	for {
		_ = w.s.SetWriteDeadline(time.Now().Add(w.beat))
		n, err := w.s.Write(p[done:])
		done += n
		if err == nil || !timedOut(err) {
			return done, err
		}
		if err := w.silent(time.Now()); err != nil {
			return done, err
		}
	}
}

// timedOut reports whether err is a deadline's (yamux's error says so by
// Timeout, QUIC's and the standard library's wrap os.ErrDeadlineExceeded).
func timedOut(err error) bool {
	var t interface{ Timeout() bool }
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &t) && t.Timeout()
}

// trim forgets the reports the submitter holds (up to seq).
func (k *sink) trim(seq uint64) {
	n := 0
	for n < len(k.unacked) && k.unacked[n].Seq <= seq {
		k.unackedBytes -= len(k.unacked[n].Data)
		if k.unacked[n].acked != nil {
			close(k.unacked[n].acked)
		}
		n++
	}
	k.unacked = append(k.unacked[:0], k.unacked[n:]...)
}

// readAcks reads the submitter's acknowledgements until the stream ends,
// stamps heard at each, and passes each heartbeat's echo to answered. No
// read deadline: serve decides from heard when the submitter is silent,
// and resets the stream, which ends this.
func readAcks(s rpc.Stream, acks chan uint64, broke chan<- error, heard *atomic.Int64, answered func(sent int64)) {
	br := bufio.NewReader(s)
	_ = s.SetReadDeadline(time.Time{}) // (connect's, for the hello's answer)
	for {
		var ack proto.ReportAck
		if err := wire.ReadJSON(br, proto.MaxReplySize, &ack); err != nil {
			broke <- err
			return
		}
		heard.Store(time.Now().UnixNano())
		if ack.Refused != "" {
			broke <- fmt.Errorf("%w: %s", errRefused, ack.Refused)
			return
		}
		if ack.Echo > 0 {
			answered(ack.Echo)
		}
		select { // keep only the latest: it covers the earlier ones
		case <-acks:
		default:
		}
		acks <- ack.Seq
	}
}
