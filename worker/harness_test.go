package worker

import (
	"bufio"
	"context"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	p2phost "github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	mocknet "github.com/libp2p/go-libp2p/p2p/net/mock"

	"github.com/zorilla-p2p/zorilla/flood"
	"github.com/zorilla-p2p/zorilla/internal/blob"
	"github.com/zorilla-p2p/zorilla/internal/rpc"
	"github.com/zorilla-p2p/zorilla/internal/wire"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// waitFor bounds every wait of the service tests: far above what any step
// takes, so that only a step that never comes fails them.
const waitFor = 20 * time.Second

// serviceNet is a Service on a host of a mocknet, with a fake runner and
// MPI router, a real blob store and lease table, and a test submitter on
// another host of the net; stranger is a third host, with an endpoint of
// its own, that holds no lease.
type serviceNet struct {
	svc      *Service
	leases   *Leases
	clock    *fakeClock
	runner   *fakeRunner
	mpi      *fakeMPI
	jobsDir  string
	worker   p2phost.Host
	sub      *testSubmitter
	stranger *rpc.Endpoint
}

// program is the job's program as the test submitter serves it.
var program = []byte("#!/bin/sh\nexit 0\n")

func newServiceNet(t *testing.T, p Policy, tweak func(*ServiceConfig)) *serviceNet {
	t.Helper()
	mn, err := mocknet.FullMeshConnected(3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mn.Close() })
	hs := mn.Hosts()
	n := &serviceNet{worker: hs[0], runner: newFakeRunner(), mpi: newFakeMPI(), jobsDir: filepath.Join(t.TempDir(), "jobs")}
	n.sub = newTestSubmitter(t, hs[1])
	n.stranger = rpc.New(hs[2])
	t.Cleanup(func() { _ = n.stranger.Close() })
	// The lease table's clock starts at the real time, which the
	// waiting line's timers compare it with; tests move it to expire.
	n.clock = &fakeClock{t: time.Now()}
	lcfg := DefaultLeaseConfig()
	lcfg.Now = n.clock.Now
	if n.leases, err = NewLeases(p, lcfg); err != nil {
		t.Fatal(err)
	}
	blobs, err := blob.New(blob.DefaultConfig(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	ep := rpc.New(n.worker)
	t.Cleanup(func() { _ = ep.Close() })
	cfg := DefaultServiceConfig()
	cfg.JobsDir, cfg.Heartbeat = n.jobsDir, 200*time.Millisecond
	if tweak != nil {
		tweak(&cfg)
	}
	n.svc, err = NewService(n.worker, ep, cfg, n.leases, n.runner, blobs, n.mpi)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.svc.Close() })
	return n
}

// testSubmitter speaks the submitter's side of the job protocols to a
// worker: it keeps every offer (unless told not to), serves the program,
// and takes and acknowledges every report, which the test reads in order.
type testSubmitter struct {
	h        p2phost.Host
	ep       *rpc.Endpoint
	refuse   atomic.Bool // refuse the offers
	offers   chan proto.OfferMsg
	declines chan proto.DeclineMsg

	mu      sync.Mutex
	held    map[string]uint64            // by lease: the last report taken
	reports map[string]chan proto.Report // by lease: the reports taken, in order
}

func newTestSubmitter(t *testing.T, h p2phost.Host) *testSubmitter {
	s := &testSubmitter{h: h, ep: rpc.New(h), offers: make(chan proto.OfferMsg, 16),
		declines: make(chan proto.DeclineMsg, 16), held: map[string]uint64{}, reports: map[string]chan proto.Report{}}
	t.Cleanup(func() { _ = s.ep.Close() })
	s.ep.Handle(proto.OfferProtocol, s.serveOffer)
	s.ep.Handle(proto.DeclineProtocol, s.serveDecline)
	s.ep.Handle(proto.FetchProtocol, s.serveFetch)
	s.ep.Handle(proto.ReportProtocol, s.serveReports)
	return s
}

func (s *testSubmitter) serveOffer(_ context.Context, _ peer.ID, st rpc.Stream) {
	var msg proto.OfferMsg
	if err := wire.ReadJSON(bufio.NewReader(st), proto.MaxReplySize, &msg); err != nil {
		_ = st.Reset()
		return
	}
	reply := proto.OfferReply{Keep: !s.refuse.Load()}
	if !reply.Keep {
		reply.Reason = "not needed"
	}
	_ = wire.WriteJSON(st, reply)
	_ = st.Close()
	s.offers <- msg
}

func (s *testSubmitter) serveDecline(_ context.Context, _ peer.ID, st rpc.Stream) {
	var msg proto.DeclineMsg
	if err := wire.ReadJSON(bufio.NewReader(st), proto.MaxReplySize, &msg); err != nil {
		_ = st.Reset()
		return
	}
	_ = st.Close()
	s.declines <- msg
}

func (s *testSubmitter) serveFetch(_ context.Context, _ peer.ID, st rpc.Stream) {
	var req proto.FetchRequest
	if err := wire.ReadJSON(bufio.NewReader(st), proto.MaxReplySize, &req); err != nil {
		_ = st.Reset()
		return
	}
	if req.Hash != blob.Sum(program).String() {
		_ = wire.WriteJSON(st, proto.FetchReply{Error: "no such file"})
		_ = st.Close()
		return
	}
	if wire.WriteJSON(st, proto.FetchReply{Size: int64(len(program))}) == nil {
		_, _ = st.Write(program)
	}
	_ = st.Close()
}

// serveReports takes one report stream: numbered reports once each,
// every one acknowledged, until RepDone.
func (s *testSubmitter) serveReports(_ context.Context, _ peer.ID, st rpc.Stream) {
	br := bufio.NewReader(st)
	var hello proto.ReportHello
	if err := wire.ReadJSON(br, proto.MaxReplySize, &hello); err != nil {
		_ = st.Reset()
		return
	}
	if wire.WriteJSON(st, proto.ReportAck{Seq: s.heldOf(hello.Lease)}) != nil {
		return
	}
	for {
		var r proto.Report
		if err := wire.ReadJSON(br, proto.MaxReportSize, &r); err != nil {
			_ = st.Reset()
			return
		}
		if r.Kind != proto.RepHeartbeat && r.Seq > s.heldOf(hello.Lease) {
			s.take(hello.Lease, r)
		}
		if wire.WriteJSON(st, proto.ReportAck{Seq: s.heldOf(hello.Lease)}) != nil {
			return
		}
		if r.Kind == proto.RepDone {
			_ = st.Close()
			return
		}
	}
}

func (s *testSubmitter) heldOf(lease string) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held[lease]
}

func (s *testSubmitter) take(lease string, r proto.Report) {
	s.mu.Lock()
	s.held[lease] = r.Seq
	s.mu.Unlock()
	s.reportsOf(lease) <- r
}

// reportsOf are the reports taken on lease's streams.
func (s *testSubmitter) reportsOf(lease string) chan proto.Report {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.reports[lease]
	if c == nil {
		c = make(chan proto.Report, 1024)
		s.reports[lease] = c
	}
	return c
}

// call sends a lease request to the worker from this submitter.
func (s *testSubmitter) call(t *testing.T, to peer.ID, req proto.LeaseRequest) proto.LeaseReply {
	t.Helper()
	return callLease(t, s.ep, to, req)
}

func callLease(t *testing.T, ep *rpc.Endpoint, to peer.ID, req proto.LeaseRequest) proto.LeaseReply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	var reply proto.LeaseReply
	if err := ep.Call(ctx, to, proto.LeaseProtocol, req, &reply, proto.MaxReplySize); err != nil {
		t.Fatalf("%s %s: %v", req.Op, req.Job, err)
	}
	return reply
}

// advertise has the worker take an advert of need from the submitter.
func (n *serviceNet) advertise(need proto.Need) {
	body, err := proto.EncodeNeed(need)
	if err != nil {
		panic(err)
	}
	now := time.Now()
	n.svc.OnAdvert(context.Background(), flood.Advert{Job: string(need.Job), Submitter: n.sub.h.ID(),
		Addrs: n.sub.h.Addrs(), Body: body, TTL: 1, Issued: now, Expires: now.Add(time.Minute)})
}

// offer advertises need and returns the worker's offer.
func (n *serviceNet) offer(t *testing.T, need proto.Need) proto.OfferMsg {
	t.Helper()
	n.advertise(need)
	return recv(t, n.sub.offers, "an offer for "+string(need.Job))
}

// commitOf is a commit of one rank, run here, of job j.
func (n *serviceNet) commitOf(j proto.JobID, lease string, attempt int) proto.LeaseRequest {
	ref := proto.FileRef{Name: "prog", Hash: blob.Sum(program).String(), Size: int64(len(program))}
	c := &proto.Commit{Key: "key-" + string(j), N: 1, R: 1, Program: ref, Procs: []proto.Proc{{Rank: 0}},
		RankTable: proto.RankTable{Hosts: []proto.HostRef{{Peer: n.worker.ID()}}, Ranks: [][]int{{0}}}, Attempt: attempt}
	return proto.LeaseRequest{Op: proto.OpCommit, Job: j, Lease: lease, Commit: c}
}

// start offers, commits and waits until the job's process runs here.
func (n *serviceNet) start(t *testing.T, need proto.Need) (string, *fakeProc, *fakeMPIJob) {
	t.Helper()
	o := n.offer(t, need)
	if rep := n.sub.call(t, n.worker.ID(), n.commitOf(need.Job, o.Lease, 1)); !rep.OK {
		t.Fatalf("commit refused: %s", rep.Error)
	}
	m := recv(t, n.mpi.added, "the job's MPI routes")
	p := recv(t, n.runner.started, "the job's process")
	n.expect(t, o.Lease, proto.RepStarted)
	return o.Lease, p, m
}

// expect reads the next reports of lease and fails unless they are of
// these kinds, in order.
func (n *serviceNet) expect(t *testing.T, lease string, kinds ...proto.ReportKind) []proto.Report {
	t.Helper()
	out := make([]proto.Report, len(kinds))
	for i, k := range kinds {
		r := recv(t, n.sub.reportsOf(lease), "report "+string(k))
		if r.Kind != k {
			t.Fatalf("report %d of lease %.6s: %s (%+v), want %s", i, lease, r.Kind, r, k)
		}
		out[i] = r
	}
	return out
}

// recv takes the next value of c, failing the test after waitFor.
func recv[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(waitFor):
		t.Fatalf("no %s in %v", what, waitFor)
		panic("unreachable")
	}
}

// closed waits until c is closed, failing the test after waitFor.
func closed(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(waitFor):
		t.Fatalf("%s not in %v", what, waitFor)
	}
}
