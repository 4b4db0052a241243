package submitter

import (
	"bufio"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/flood"
	"github.com/zorilla-p2p/zorilla/internal/rpc"
	"github.com/zorilla-p2p/zorilla/internal/wire"
	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// fakeWorker speaks a worker's side of the job protocols, as little as a
// session needs: it offers one slot, answers every lease request, and on
// the commit hands the test the commit; the test then opens the report
// stream and says what goes on it.
type fakeWorker struct {
	h       host.Host
	ep      *rpc.Endpoint
	commits chan proto.LeaseRequest
	// stall, when set, holds the reply to every release until it is
	// closed: a slow host, or one whose reply is lost.
	stall chan struct{}
}

func newFakeWorker(t *testing.T, h host.Host) *fakeWorker {
	w := &fakeWorker{h: h, ep: rpc.New(h), commits: make(chan proto.LeaseRequest, 4)}
	t.Cleanup(func() { _ = w.ep.Close() })
	w.ep.Handle(proto.LeaseProtocol, func(_ context.Context, _ peer.ID, s rpc.Stream) {
		var req proto.LeaseRequest
		if err := wire.ReadJSON(bufio.NewReader(s), proto.MaxLeaseSize, &req); err != nil {
			_ = s.Reset()
			return
		}
		if req.Op == proto.OpRelease && w.stall != nil {
			<-w.stall
		}
		_ = wire.WriteJSON(s, proto.LeaseReply{OK: true})
		_ = s.Close()
		if req.Op == proto.OpCommit {
			w.commits <- req
		}
	})
	return w
}

// answerLeases has h answer every lease request with OK, handing the
// request to seen first (when seen is not nil), as a worker that keeps
// every lease would; it returns h's endpoint.
func answerLeases(t *testing.T, h host.Host, seen func(proto.LeaseRequest)) *rpc.Endpoint {
	ep := rpc.New(h)
	t.Cleanup(func() { _ = ep.Close() })
	ep.Handle(proto.LeaseProtocol, func(_ context.Context, _ peer.ID, s rpc.Stream) {
		var req proto.LeaseRequest
		if err := wire.ReadJSON(bufio.NewReader(s), proto.MaxLeaseSize, &req); err != nil {
			_ = s.Reset()
			return
		}
		if seen != nil {
			seen(req)
		}
		_ = wire.WriteJSON(s, proto.LeaseReply{OK: true})
		_ = s.Close()
	})
	return ep
}

// offer offers the job one slot under lease.
func (w *fakeWorker) offer(ctx context.Context, sub peer.ID, id job.ID, lease string) error {
	var reply proto.OfferReply
	msg := proto.OfferMsg{Job: id, Lease: lease, Slots: 1, Cores: 1, Expires: time.Now().Add(time.Minute)}
	if err := w.ep.Call(ctx, sub, proto.OfferProtocol, msg, &reply, proto.MaxReplySize); err != nil {
		return err
	}
	if !reply.Keep {
		return fmt.Errorf("offer not kept: %s", reply.Reason)
	}
	return nil
}

// fakeReports is a fake worker's report stream: numbered reports and, until
// quiet, a heartbeat every beat.
type fakeReports struct {
	mu    sync.Mutex // one writer at a time; guards below
	s     rpc.Stream
	seq   uint64    // the last numbered report's number
	last  time.Time // when the stream last carried anything
	quiet chan struct{}
	done  chan struct{}
}

// openReports opens the report stream of commit c to sub and starts its
// heartbeats.
func (w *fakeWorker) openReports(ctx context.Context, sub peer.ID, c proto.LeaseRequest, beat time.Duration) (*fakeReports, error) {
	s, _, err := dialReports(ctx, w.ep, sub, c)
	if err != nil {
		return nil, err
	}
	r := &fakeReports{s: s, last: time.Now(), quiet: make(chan struct{}), done: make(chan struct{})}
	go r.beat(beat)
	return r, nil
}

// dialReports opens a report stream, says hello and reads the answer.
func dialReports(ctx context.Context, ep *rpc.Endpoint, sub peer.ID, c proto.LeaseRequest) (rpc.Stream, proto.ReportAck, error) {
	var ack proto.ReportAck
	s, err := ep.Open(ctx, sub, proto.ReportProtocol)
	if err != nil {
		return nil, ack, err
	}
	if err := wire.WriteJSON(s, proto.ReportHello{Job: c.Job, Key: c.Commit.Key, Lease: c.Lease}); err != nil {
		_ = s.Reset()
		return nil, ack, err
	}
	br := bufio.NewReader(s)
	if err := wire.ReadJSON(br, proto.MaxReplySize, &ack); err != nil || ack.Refused != "" {
		_ = s.Reset()
		return nil, ack, fmt.Errorf("report stream answer %+v: %v", ack, err)
	}
	go func() { // acknowledgements: read and forgotten, until the stream ends
		var later proto.ReportAck
		for wire.ReadJSON(br, proto.MaxReplySize, &later) == nil {
		}
	}()
	return s, ack, nil
}

func (r *fakeReports) beat(every time.Duration) {
	defer close(r.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			if r.write(proto.Report{Kind: proto.RepHeartbeat}) != nil {
				return
			}
		case <-r.quiet:
			return
		}
	}
}

// send sends a numbered report.
func (r *fakeReports) send(e proto.Report) error {
	r.mu.Lock()
	r.seq++
	e.Seq = r.seq
	r.mu.Unlock()
	return r.write(e)
}

func (r *fakeReports) write(e proto.Report) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := wire.WriteJSON(r.s, e); err != nil {
		return err
	}
	r.last = time.Now()
	return nil
}

// silence stops the heartbeats and says when the stream last carried
// anything.
func (r *fakeReports) silence() time.Time {
	close(r.quiet)
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// livenessNet is a submitter and n fake workers on a mocknet, with a
// LostAfter of lostAfter, and a job of n ranks (one a worker, retries 0)
// submitted and running: every worker has sent started and ready, and the
// session has taken every start.
type livenessNet struct {
	sub     *Submitter
	store   *job.Store
	id      job.ID
	subID   peer.ID
	workers []*fakeWorker
	commits []proto.LeaseRequest
	reports []*fakeReports
	ended   chan job.Record
}

func startLivenessNet(t *testing.T, ctx context.Context, n int, lostAfter, beat time.Duration, tune ...func(*fakeWorker)) *livenessNet {
	cfg := DefaultConfig()
	cfg.Schedule = flood.Schedule{First: 50 * time.Millisecond, Factor: 2, MaxRadius: 8}
	cfg.OfferGrace = 50 * time.Millisecond
	cfg.LostAfter = lostAfter
	m := newMockSubmitter(t, n, cfg, nil)
	hosts, sub, store, prog, ads := m.hosts, m.sub, m.store, m.prog, m.ads
	ln := &livenessNet{sub: sub, store: store, subID: hosts[0].ID(), ended: make(chan job.Record, 1)}
	for _, wh := range hosts[1:] {
		w := newFakeWorker(t, wh)
		for _, f := range tune {
			f(w)
		}
		ln.workers = append(ln.workers, w)
	}
	d := job.NewDescription("prog.sh", nil, n)
	d.Retries = 0
	var err error
	if ln.id, err = sub.Submit(Submission{Desc: d, Program: prog}); err != nil {
		t.Fatal(err)
	}
	<-ads
	running := make(chan struct{})
	go func() {
		_ = sub.Watch(ctx, ln.id, 0, func(u job.Update) error {
			switch {
			case u.Kind == "state" && u.State == job.Running:
				close(running)
			case u.Kind == "end":
				ln.ended <- *u.Record
			}
			return nil
		})
	}()
	ln.run(t, ctx, beat)
	select { // every host's start taken: a fault from now on hits a running job
	case <-running:
	case rec := <-ln.ended:
		t.Fatalf("the job ended %s before it ran: %s", rec.State, rec.Reason)
	case <-ctx.Done():
		t.Fatal("the job did not run")
	}
	return ln
}

// run has every worker offer, take its commit, open its reports and
// report its processes started and in Init.
func (ln *livenessNet) run(t *testing.T, ctx context.Context, beat time.Duration) {
	for i, w := range ln.workers {
		if err := w.offer(ctx, ln.subID, ln.id, fmt.Sprintf("lease-%d", i)); err != nil {
			t.Fatalf("worker %d: %v", i, err)
		}
	}
	for i, w := range ln.workers {
		select {
		case c := <-w.commits:
			ln.commits = append(ln.commits, c)
		case <-ctx.Done():
			t.Fatalf("worker %d: no commit", i)
		}
	}
	for i, w := range ln.workers {
		r, err := w.openReports(ctx, ln.subID, ln.commits[i], beat)
		if err != nil {
			t.Fatalf("worker %d: %v", i, err)
		}
		t.Cleanup(func() { _ = r.s.Reset() })
		ln.reports = append(ln.reports, r)
		for _, k := range []proto.ReportKind{proto.RepStarted, proto.RepReady} {
			if err := r.send(proto.Report{Kind: k}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// finish has every worker report its rank's exit 0 and its end.
func (ln *livenessNet) finish(t *testing.T) {
	for i, r := range ln.reports {
		rank := ln.commits[i].Commit.Procs[0].Rank
		if err := r.send(proto.Report{Kind: proto.RepExit, Rank: rank}); err != nil {
			t.Fatal(err)
		}
		if err := r.send(proto.Report{Kind: proto.RepDone}); err != nil {
			t.Fatal(err)
		}
	}
}

// end waits for the job's end.
func (ln *livenessNet) end(t *testing.T, ctx context.Context) job.Record {
	select {
	case rec := <-ln.ended:
		return rec
	case <-ctx.Done():
		t.Fatal("the job did not end")
	}
	return job.Record{}
}
