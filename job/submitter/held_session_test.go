package submitter

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/host"

	"github.com/zorilla-p2p/zorilla/flood"
	"github.com/zorilla-p2p/zorilla/internal/rpc"
	"github.com/zorilla-p2p/zorilla/internal/wire"
	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// busyNet is a fake flood whose radius 1 reaches every worker, which
// declines as busy; offerAfter after radius 2 goes out, their slots free
// and each offers, as a worker's waiting line does (worker/waitq.go).
type busyNet struct {
	*edgeNet
	offerAfter time.Duration
	once       sync.Once
}

func (n *busyNet) Flood(ctx context.Context, ad flood.Advert, r int) error {
	n.mu.Lock()
	n.radii = append(n.radii, r)
	n.mu.Unlock()
	switch r {
	case 1:
		for _, w := range n.workers {
			n.decline(ctx, ad.Job, w)
		}
	case 2:
		n.once.Do(func() {
			time.AfterFunc(n.offerAfter, func() {
				for _, w := range n.workers {
					n.offer(ctx, ad.Job, w)
				}
			})
		})
	}
	return nil
}

// decline has w tell the submitter it is busy.
func (n *busyNet) decline(ctx context.Context, jobID string, w host.Host) {
	ep := rpc.New(w)
	defer ep.Close()
	st, err := ep.Open(ctx, n.sub.ID(), proto.DeclineProtocol)
	if err != nil {
		n.t.Errorf("decline from %s: %v", w.ID(), err)
		return
	}
	if err := wire.WriteJSON(st, proto.DeclineMsg{Job: job.ID(jobID), Code: proto.DeclineBusy}); err != nil {
		n.t.Errorf("decline from %s: %v", w.ID(), err)
	}
	_ = st.Close()
}

// A job made feasible by offers from agents that answered before (they
// declined as busy, then offered when their slots freed) is placed once
// those offers are in, not at its scheduling deadline: the flood loop is
// held from the moment the job is feasible, and the session must then
// decide on its own. job.Spread of 4 over 3 hosts of 4 slots is feasible and
// never "enough" (one host per process), so nothing else ends the wait.
func TestFeasibleFromHeardAgentsPlacesBeforeDeadline(t *testing.T) {
	edge, sub := startEdgeNet(t, 3, 3, 0)
	n := &busyNet{edgeNet: edge, offerAfter: time.Second}
	sub.flood = n
	sub.cfg.Schedule.First = 300 * time.Millisecond // radius 2 goes after it, unless answered sooner
	d := job.NewDescription("hostname.sh", nil, 4)
	d.Strategy = job.Spread
	d.Deadline = 40 * time.Second
	t0 := time.Now()
	end := runDry(t, sub, d, n.prog)
	took := time.Since(t0)
	if len(end.Plan.Hosts) != 3 {
		t.Fatalf("placed on %d hosts, want the 3 that offered", len(end.Plan.Hosts))
	}
	// Placed on the offers, not by the deadline: half of it is a margin
	// no loaded machine needs (the offers come at 1 s).
	if took >= d.Deadline/2 {
		t.Fatalf("placed after %v: the session waited for its deadline (%v) with the offers in hand", took, d.Deadline)
	}
}
