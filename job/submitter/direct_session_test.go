package submitter

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	mocknet "github.com/libp2p/go-libp2p/p2p/net/mock"

	"github.com/zorilla-p2p/zorilla/flood"
	"github.com/zorilla-p2p/zorilla/internal/rpc"
	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/lifecycle"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// edgeNet is a fake flood over workers of which radius r reaches the
// first r*reach: the last few sit one radius beyond the rest, as the last
// agents of a graph do behind a full flood. Each worker reached (by a
// radius or directly) offers once.
type edgeNet struct {
	t       *testing.T
	sub     host.Host
	workers []host.Host
	reach   int
	prog    proto.FileRef // the dry runs' program, in the submitter's blob store

	late map[peer.ID]time.Duration // how long a worker takes to offer (a loaded host)

	mu      sync.Mutex
	offered map[peer.ID]bool
	radii   []int       // flooded, in order
	direct  [][]peer.ID // Direct calls
}

// Flood floods radius r: the first r*reach workers offer, each once.
func (n *edgeNet) Flood(ctx context.Context, ad flood.Advert, r int) error {
	n.mu.Lock()
	n.radii = append(n.radii, r)
	n.mu.Unlock()
	for _, w := range n.workers[:min(len(n.workers), r*n.reach)] {
		n.offer(ctx, ad.Job, w)
	}
	return nil
}

func (n *edgeNet) MaxTTL() int { return flood.HardMaxTTL }

func (n *edgeNet) Direct(ctx context.Context, ad flood.Advert, to []peer.ID) error {
	n.mu.Lock()
	n.direct = append(n.direct, slices.Clone(to))
	n.mu.Unlock()
	for _, w := range n.workers {
		if slices.Contains(to, w.ID()) {
			n.offer(ctx, ad.Job, w)
		}
	}
	return nil
}

// offer has w offer 4 slots for job, once.
func (n *edgeNet) offer(ctx context.Context, jobID string, w host.Host) {
	n.mu.Lock()
	done := n.offered[w.ID()]
	n.offered[w.ID()] = true
	n.mu.Unlock()
	if done {
		return
	}
	go func() {
		select {
		case <-time.After(n.late[w.ID()]):
		case <-ctx.Done():
			return
		}
		ep := rpc.New(w)
		defer ep.Close()
		var reply proto.OfferReply
		msg := proto.OfferMsg{Job: job.ID(jobID), Lease: "lease-" + w.ID().String(), Slots: 4, Cores: 4, Expires: time.Now().Add(time.Minute)}
		if err := ep.Call(ctx, n.sub.ID(), proto.OfferProtocol, msg, &reply, proto.MaxReplySize); err != nil && ctx.Err() == nil {
			n.t.Errorf("offer from %s: %v", w.ID(), err)
		}
	}()
}

// Ping and Known make the fake the submitter's overlay: it knows every
// worker, 1 ms away.
func (n *edgeNet) Ping(context.Context, peer.ID) (time.Duration, error) { return time.Millisecond, nil }

func (n *edgeNet) Known() []job.PeerRTT {
	var out []job.PeerRTT
	for _, w := range n.workers {
		out = append(out, job.PeerRTT{ID: w.ID(), RTT: time.Millisecond})
	}
	return out
}

// A spread over more processes than hosts is placed once every peer the
// overlay knows has answered. When a radius leaves a few of them silent,
// the advert goes to them directly, not in a wider radius, and once they
// answer the job is placed on every host without another radius.
func TestReserveSendsDirect(t *testing.T) {
	if raceOn {
		t.Skip("which hosts count as silent rests on the 50 ms answer gap, and under the race detector a first-radius offer can come later than that")
	}
	for _, tc := range []struct {
		name   string
		direct int // Config.Direct
		radii  int // radii flooded
	}{
		{"direct", 16, 1},
		{"off: a radius more", 0, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, sub := startEdgeNet(t, 6, 4, tc.direct)
			d := job.NewDescription("hostname.sh", nil, 12) // spread: 12 processes, 6 hosts of 4 slots
			d.Strategy = job.Spread
			end := runDry(t, sub, d, n.prog)
			n.mu.Lock()
			defer n.mu.Unlock()
			if len(end.Plan.Hosts) != len(n.workers) {
				t.Fatalf("placed on %d hosts of %d", len(end.Plan.Hosts), len(n.workers))
			}
			if len(n.radii) != tc.radii {
				t.Fatalf("radii flooded %v, want %d", n.radii, tc.radii)
			}
			var want [][]peer.ID
			if tc.direct > 0 {
				want = [][]peer.ID{{n.workers[4].ID(), n.workers[5].ID()}}
			}
			if fmt.Sprint(n.direct) != fmt.Sprint(want) {
				t.Fatalf("direct adverts to %v, want %v", n.direct, want)
			}
		})
	}
}

// A job that only every agent together can hold is placed when the last
// agent answers late, well after the others (a loaded host): an agent the
// overlay knows has not answered, so the flood has not reached every agent
// it can, and the job is not hopeless yet.
func TestReserveWaitsForALateAgent(t *testing.T) {
	n, sub := startEdgeNet(t, 4, 4, 0, func(c *Config) {
		// The testnets' schedule: the radii's times, at which the loop
		// looks whether the job is hopeless, come every few seconds.
		c.Schedule = flood.Schedule{First: 100 * time.Millisecond, Factor: 2, MaxRadius: 4}
	})
	last := n.workers[3].ID()
	n.late = map[peer.ID]time.Duration{last: lifecycle.DefaultConfig().QuietAfter + 1500*time.Millisecond}
	d := job.NewDescription("hostname.sh", nil, 16) // spread: 16 processes, 4 hosts of 4 slots
	d.Strategy = job.Spread
	end := runDry(t, sub, d, n.prog)
	if len(end.Plan.Hosts) != len(n.workers) {
		t.Fatalf("placed on %d hosts of %d", len(end.Plan.Hosts), len(n.workers))
	}
}

// startEdgeNet starts a submitter and workers on mocknet, each radius
// reaching reach more of them; tune, if given, changes the submitter's
// config.
func startEdgeNet(t *testing.T, workers, reach, direct int, tune ...func(*Config)) (*edgeNet, *Submitter) {
	mn, err := mocknet.FullMeshConnected(1 + workers)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mn.Close() })
	hosts := mn.Hosts()
	n := &edgeNet{t: t, sub: hosts[0], workers: hosts[1:], reach: reach, offered: map[peer.ID]bool{}}
	for _, w := range n.workers { // dry runs cancel every lease at the end
		answerLeases(t, w, nil)
	}
	store, blobs, prog := storeAndProgram(t)
	n.prog = prog
	cfg := DefaultConfig()
	cfg.Schedule = flood.Schedule{First: time.Minute, Factor: 2, MaxRadius: 4} // radii move on only when answered
	cfg.OfferGrace = 200 * time.Millisecond
	cfg.AnswerGap = 50 * time.Millisecond
	cfg.Direct = direct
	for _, f := range tune {
		f(&cfg)
	}
	ep := rpc.New(n.sub)
	t.Cleanup(func() { _ = ep.Close() })
	sub, err := New(n.sub, ep, cfg, n, n, blobs, store)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Close() })
	return n, sub
}

// runDry submits d as a dry run and returns its final record, which must
// hold a plan.
func runDry(t *testing.T, sub *Submitter, d job.Description, prog proto.FileRef) job.Record {
	id, err := sub.Submit(Submission{Desc: d, Program: prog, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	end, err := watchEnd(ctx, sub, id)
	if err != nil || end == nil || end.Plan == nil {
		t.Fatalf("watch: %v; record %+v", err, end)
	}
	return *end
}
