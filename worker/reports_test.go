package worker

import (
	"bufio"
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/internal/rpc"
	"github.com/zorilla-p2p/zorilla/internal/wire"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// pipeStream is one end of an in-memory stream.
type pipeStream struct{ net.Conn }

func (p pipeStream) Reset() error { return p.Close() }

// fakeSubmitter serves the sink's streams: it answers each hello with the
// last report it holds, takes numbered reports once, acknowledges each
// heartbeat, and breaks the first stream after it took breakAfter reports
// (acknowledging none of them).
type fakeSubmitter struct {
	breakAfter uint64
	mute       bool          // on the first stream, answer nothing after the hello's answer and never break
	pause      time.Duration // on the first stream, after the first report, read nothing for this long but acknowledge every beat; then answer heartbeats
	refuse     string        // the answer to every stream after the first
	echoBeats  int32         // on the first stream, answer this many heartbeats, echoing their At, then nothing
	echoed     atomic.Int64  // the At last echoed
	echoes     atomic.Int32  // how many were
	held       uint64
	taken      []proto.Report
	streams    int
}

func (f *fakeSubmitter) serve(s net.Conn) {
	defer s.Close()
	f.streams++
	first := f.streams == 1
	br := bufio.NewReader(s)
	var hello proto.ReportHello
	if wire.ReadJSON(br, proto.MaxReplySize, &hello) != nil {
		return
	}
	refuse := ""
	if !first {
		refuse = f.refuse
	}
	if wire.WriteJSON(s, proto.ReportAck{Seq: f.held, Refused: refuse}) != nil || refuse != "" {
		return
	}
	for {
		var r proto.Report
		if wire.ReadJSON(br, proto.MaxReportSize, &r) != nil {
			return
		}
		if r.Kind == proto.RepHeartbeat && first && f.echoBeats > 0 {
			if f.echoes.Load() < f.echoBeats {
				f.echoed.Store(r.At) // before the answer: the sink may act on it at once
				f.echoes.Add(1)
				if wire.WriteJSON(s, proto.ReportAck{Seq: f.held, Echo: r.At}) != nil {
					return
				}
			}
			continue
		}
		if r.Kind == proto.RepHeartbeat {
			if (!first || f.pause > 0) && wire.WriteJSON(s, proto.ReportAck{Seq: f.held}) != nil {
				return
			}
			continue
		}
		if r.Seq <= f.held {
			continue // sent again: taken already
		}
		f.held = r.Seq
		f.taken = append(f.taken, r)
		if first && f.mute {
			continue
		}
		if first && f.pause > 0 && len(f.taken) == 1 && !f.ackWhileDeaf(s) {
			return
		}
		if first && f.held == f.breakAfter {
			return
		}
		if r.Kind == proto.RepDone {
			_ = wire.WriteJSON(s, proto.ReportAck{Seq: f.held})
			return
		}
	}
}

// ackWhileDeaf reads nothing for f.pause, acknowledging what it holds every
// tenth of it, as a submitter alive but slow to read.
func (f *fakeSubmitter) ackWhileDeaf(s net.Conn) bool {
	t := time.NewTicker(f.pause / 10)
	defer t.Stop()
	for end := time.Now().Add(f.pause); time.Now().Before(end); {
		<-t.C
		if wire.WriteJSON(s, proto.ReportAck{Seq: f.held}) != nil {
			return false
		}
	}
	return true
}

// testSink is a sink whose streams go to f, one at a time.
// Its beat is long enough that no stream breaks for silence on a loaded
// machine (the limit is 4 beats): the streams the tests count break only
// where the fake submitter breaks them.
func testSink(t *testing.T, f *fakeSubmitter, grace time.Duration, reachable func() bool) *sink {
	return testSinkBeat(t, f, grace, reachable, 500*time.Millisecond)
}

// testSinkBeat is testSink with a beat of its own, for the tests of
// silence.
func testSinkBeat(t *testing.T, f *fakeSubmitter, grace time.Duration, reachable func() bool, beat time.Duration) *sink {
	t.Helper()
	served := make(chan struct{}, 1)
	served <- struct{}{}
	k := newSink(beat, grace)
	k.open = func(ctx context.Context) (rpc.Stream, error) {
		if !reachable() {
			return nil, errors.New("unreachable")
		}
		<-served // the fake serves one stream at a time
		a, b := net.Pipe()
		go func() {
			defer func() { served <- struct{}{} }()
			f.serve(b)
		}()
		if err := wire.WriteJSON(a, proto.ReportHello{Job: "j"}); err != nil {
			return nil, err
		}
		return pipeStream{a}, nil
	}
	return k
}

// sendAll connects k, runs it, sends n outputs ('a', 'b', ...) and
// RepDone, and waits until the sink has ended.
func sendAll(t *testing.T, k *sink, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := k.connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	go k.run(ctx, s)
	for i := range n {
		if !k.send(ctx, proto.Report{Kind: proto.RepOutput, Data: []byte{byte('a' + i)}}) {
			t.Fatal("send failed")
		}
	}
	k.send(ctx, proto.Report{Kind: proto.RepDone})
	select {
	case <-k.done:
	case <-ctx.Done():
		t.Fatal("sink did not end")
	}
}

// TestSinkSendsAgainAfterABreak: the stream breaks after the submitter
// took three reports without acknowledging them; the sink opens a new one
// and sends from the fourth on, and the submitter gets each report once,
// in order; the sink ends once RepDone is acknowledged.
func TestSinkSendsAgainAfterABreak(t *testing.T) {
	f := &fakeSubmitter{breakAfter: 3}
	k := testSink(t, f, 10*time.Second, func() bool { return true })
	sendAll(t, k, 6)
	select {
	case <-k.lost:
		t.Fatal("sink gave the submitter up")
	default:
	}
	if len(f.taken) != 7 || f.streams != 2 {
		t.Fatalf("%d reports over %d streams, want 7 over 2", len(f.taken), f.streams)
	}
	for i, r := range f.taken {
		if r.Seq != uint64(i+1) || (i < 6 && r.Data[0] != byte('a'+i)) {
			t.Fatalf("report %d: %+v", i, r)
		}
	}
}

// TestSinkGivesUpAfterGrace: a submitter unreachable for the grace period
// is lost (the job's processes are then ended); one that refuses is lost
// at once.
func TestSinkGivesUpAfterGrace(t *testing.T) {
	for name, f := range map[string]*fakeSubmitter{"unreachable": {breakAfter: 1}, "refused": {breakAfter: 1, refuse: "counted lost"}} {
		t.Run(name, func(t *testing.T) {
			var up atomic.Bool
			up.Store(true)
			grace := 300 * time.Millisecond
			if name == "refused" {
				grace = time.Hour
			}
			k := testSink(t, f, grace, up.Load)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			s, err := k.connect(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if name == "unreachable" {
				up.Store(false)
			}
			go k.run(ctx, s)
			k.send(ctx, proto.Report{Kind: proto.RepOutput}) // the stream breaks after it
			select {
			case <-k.lost:
			case <-ctx.Done():
				t.Fatal("sink still waits for its submitter")
			}
			<-k.done
		})
	}
}

// TestSinkBreaksOnSilentSubmitter: a submitter that takes the reports but
// answers nothing, not even the heartbeats, gets its stream broken after
// 4 beats of silence; the sink opens a new one, sends again what was not
// acknowledged, and the submitter holds each report once.
func TestSinkBreaksOnSilentSubmitter(t *testing.T) {
	f := &fakeSubmitter{mute: true}
	beat := 50 * time.Millisecond
	k := testSinkBeat(t, f, 10*time.Second, func() bool { return true }, beat)
	start := time.Now()
	sendAll(t, k, 3)
	if took := time.Since(start); took < 4*beat {
		t.Errorf("the silent stream broke after %v, before 4 beats (%v)", took, 4*beat)
	}
	if len(f.taken) != 4 || f.streams != 2 {
		t.Fatalf("%d reports over %d streams, want 4 over 2", len(f.taken), f.streams)
	}
	for i, r := range f.taken {
		if r.Seq != uint64(i+1) {
			t.Fatalf("report %d: %+v", i, r)
		}
	}
}

// TestSinkWaitsForASlowSubmitter: a submitter that reads nothing for 6
// beats but answers meanwhile (alive, slow: its machine busy) keeps its
// stream: the sink's writes wait a beat at a time while the submitter is
// heard from, where a write deadline of 4 beats broke the stream.
func TestSinkWaitsForASlowSubmitter(t *testing.T) {
	beat := 50 * time.Millisecond
	f := &fakeSubmitter{pause: 6 * beat}
	k := testSinkBeat(t, f, 10*time.Second, func() bool { return true }, beat)
	sendAll(t, k, 5)
	if len(f.taken) != 6 || f.streams != 1 {
		t.Fatalf("%d reports over %d streams, want 6 over 1", len(f.taken), f.streams)
	}
	for i, r := range f.taken {
		if r.Seq != uint64(i+1) {
			t.Fatalf("report %d: %+v", i, r)
		}
	}
}

// TestSinkFenceCountsFromTheLastAnsweredSend: the fence's count of the
// submitter's silence starts at the send of the latest message it
// answered: the hello at first, then each heartbeat whose At it echoes,
// never at the answer's arrival; an echo the sink never sent (later than
// now, or older than the latest) moves nothing.
func TestSinkFenceCountsFromTheLastAnsweredSend(t *testing.T) {
	f := &fakeSubmitter{echoBeats: 3}
	// Unreachable once it stopped answering: no new stream's hello
	// moves the count meanwhile.
	k := testSinkBeat(t, f, time.Hour, func() bool { return f.echoes.Load() < 3 }, 100*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	before := k.mark(time.Now())
	s, err := k.connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if hello := k.answered.Load(); hello < before || hello > k.mark(time.Now()) {
		t.Fatalf("answered %d after the hello, want the hello's send, in [%d, now]", hello, before)
	}
	go k.run(ctx, s)
	for f.echoes.Load() < 3 || k.answered.Load() != f.echoed.Load() {
		select {
		case <-k.answers:
		case <-time.After(waitFor):
			t.Fatalf("%d echoes, answered %d, last echoed %d", f.echoes.Load(), k.answered.Load(), f.echoed.Load())
		}
	}
	last := f.echoed.Load()
	now := time.Now()
	if got, want := k.unanswered(now), time.Duration(k.mark(now)-last); got != want {
		t.Fatalf("unanswered %v, want %v: from the echoed beat's send", got, want)
	}
	k.answer(k.mark(now.Add(time.Hour)))
	k.answer(last - 1)
	if k.answered.Load() != last {
		t.Fatalf("answered moved to %d on an echo never sent, or older", k.answered.Load())
	}
}

// TestFenceBeat: at least two beats fit in a job's fence.
func TestFenceBeat(t *testing.T) {
	for _, c := range []struct{ beat, fence, want time.Duration }{
		{2 * time.Second, 0, 2 * time.Second},
		{2 * time.Second, 5 * time.Second, 2 * time.Second},
		{2 * time.Second, 2500 * time.Millisecond, 1250 * time.Millisecond},
		{200 * time.Millisecond, time.Second, 200 * time.Millisecond},
	} {
		if got := FenceBeat(c.beat, c.fence); got != c.want {
			t.Errorf("FenceBeat(%v, %v) = %v, want %v", c.beat, c.fence, got, c.want)
		}
	}
}
