package submitter

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/flood"
	"github.com/zorilla-p2p/zorilla/internal/rpc"
	"github.com/zorilla-p2p/zorilla/internal/wire"
	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// A reserving job that cannot be placed yet, told by a worker that an
// earlier job waits for the slots it holds there (DeclineYield), gives
// that lease back, and only that one. (Whether a placeable job keeps it
// is ShouldYield's table.)
func TestYieldGivesBackAContestedLease(t *testing.T) {
	req := yieldScenario(t, 2)
	if req.Op != proto.OpCancel || req.Lease != "lease-0" {
		t.Fatalf("after a yield the worker got %s of %s, want cancel of lease-0", req.Op, req.Lease)
	}
}

// yieldScenario submits a job of n=3, has offers workers offer one slot
// each, then the first of them ask it to yield, and returns the first
// lease request a worker gets after that.
func yieldScenario(t *testing.T, offers int) proto.LeaseRequest {
	cfg := DefaultConfig()
	// No radius ends while the test runs: nothing but the yield makes the
	// session give a lease back.
	cfg.Schedule = flood.Schedule{First: time.Hour, Factor: 2, MaxRadius: 8}
	m := newMockSubmitter(t, offers, cfg, nil)
	hosts, sub, prog, ads := m.hosts, m.sub, m.prog, m.ads
	cancels := make(chan proto.LeaseRequest, 16)
	for _, w := range hosts[1:] {
		answerLeases(t, w, func(req proto.LeaseRequest) { cancels <- req })
	}
	d := job.NewDescription("true.sh", nil, 3)
	if _, err := sub.Submit(Submission{Desc: d, Program: prog}); err != nil {
		t.Fatal(err)
	}
	id := job.ID(<-ads)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i, w := range hosts[1:] {
		wep := rpc.New(w)
		var reply proto.OfferReply
		msg := proto.OfferMsg{Job: id, Lease: fmt.Sprintf("lease-%d", i), Slots: 1, Cores: 1, Expires: time.Now().Add(time.Minute)}
		err := wep.Call(ctx, hosts[0].ID(), proto.OfferProtocol, msg, &reply, proto.MaxReplySize)
		_ = wep.Close()
		if err != nil || !reply.Keep {
			t.Fatalf("offer %d: %v %q", i, err, reply.Reason)
		}
	}
	tell := func(from int, msg proto.DeclineMsg) {
		wep := rpc.New(hosts[from])
		defer wep.Close()
		st, err := wep.Open(ctx, hosts[0].ID(), proto.DeclineProtocol)
		if err != nil {
			t.Fatal(err)
		}
		if err := wire.WriteJSON(st, msg); err != nil {
			t.Fatal(err)
		}
		_ = st.Close()
	}
	tell(1, proto.DeclineMsg{Job: id, Code: proto.DeclineYield})
	select {
	case req := <-cancels:
		return req
	case <-ctx.Done():
		t.Fatal("no lease request after a yield")
		return proto.LeaseRequest{}
	}
}
