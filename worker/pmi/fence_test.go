package pmi

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// memNet joins fences in memory, as Network does over libp2p.
type memNet struct {
	hosts  []peer.ID
	fences []*Fence
}

func newMemNet(t *testing.T, nhosts, fanout int, local func(h int) []int) *memNet {
	t.Helper()
	m := &memNet{hosts: make([]peer.ID, nhosts), fences: make([]*Fence, nhosts)}
	for i := range m.hosts {
		m.hosts[i] = peer.ID(fmt.Sprintf("host-%d", i))
	}
	for i := range nhosts {
		f, err := NewFence(FenceSpec{Job: "j", Key: "k", Hosts: m.hosts, Self: i, Local: local(i), Fanout: fanout}, m.send)
		if err != nil {
			t.Fatal(err)
		}
		m.fences[i] = f
		t.Cleanup(f.Close)
	}
	return m
}

func (m *memNet) send(_ context.Context, to peer.ID, msg Msg) error {
	for i, h := range m.hosts {
		if h == to {
			return m.fences[i].Deliver(m.hosts[msg.From], msg)
		}
	}
	return fmt.Errorf("no host %s", to)
}

// TestFenceTree: 600 hosts of one rank each, in a tree of fanout 8, go
// through three barriers; after each every host sees every rank's put.
func TestFenceTree(t *testing.T) {
	const hosts = 600
	m := newMemNet(t, hosts, DefaultFanout, func(h int) []int { return []int{h} })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, f := range m.fences {
		f.Release()
	}
	for epoch := range 3 {
		var wg sync.WaitGroup
		errs := make(chan error, hosts)
		for r, f := range m.fences {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := f.Put(r, fmt.Sprintf("r%d-e%d", r, epoch), fmt.Sprint(r*epoch)); err != nil {
					errs <- err
					return
				}
				if err := f.Barrier(ctx, r); err != nil {
					errs <- fmt.Errorf("rank %d barrier %d: %w", r, epoch, err)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		for _, h := range []int{0, 1, 77, hosts - 1} {
			for r := range hosts {
				if v, ok := m.fences[h].Get(fmt.Sprintf("r%d-e%d", r, epoch)); !ok || v != fmt.Sprint(r*epoch) {
					t.Fatalf("host %d after barrier %d: rank %d's key = %q, %v", h, epoch, r, v, ok)
				}
			}
		}
	}
}

// TestFenceFirstBarrierIsPhaseTwo: Ready closes once every local rank is
// in the first barrier, and that barrier ends only after Release.
func TestFenceFirstBarrierIsPhaseTwo(t *testing.T) {
	m := newMemNet(t, 2, 2, func(h int) []int { return []int{2 * h, 2*h + 1} })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error, 4)
	for r := range 4 {
		go func() { done <- m.fences[r/2].Barrier(ctx, r) }()
	}
	for _, f := range m.fences {
		select {
		case <-f.Ready():
		case <-ctx.Done():
			t.Fatal("a host never got ready")
		}
	}
	select {
	case err := <-done:
		t.Fatalf("a barrier ended before the release: %v", err)
	default:
	}
	m.fences[0].Release()
	select {
	case err := <-done:
		t.Fatalf("a barrier ended before every host's release: %v", err)
	default:
	}
	m.fences[1].Release()
	for range 4 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// TestFenceRefuses: messages that do not fit the tree or the barrier are
// refused, and the fence goes on working.
func TestFenceRefuses(t *testing.T) {
	m := newMemNet(t, 4, 2, func(h int) []int { return []int{h} })
	f1 := m.fences[1] // parent 0, child 3
	cases := []struct {
		from peer.ID
		msg  Msg
	}{
		{m.hosts[2], Msg{From: 3, Epoch: 0}},             // claims another host's index
		{m.hosts[3], Msg{From: 3, Epoch: 1}},             // wrong barrier
		{m.hosts[2], Msg{From: 2, Epoch: 0}},             // not a child of 1
		{m.hosts[0], Msg{From: 0, Epoch: 0, Down: true}}, // a merge before host 1 sent up
		{m.hosts[3], Msg{From: 3, Epoch: 0, Down: true}}, // a merge from a child
		{"stranger", Msg{From: 3, Epoch: 0}},             // not a host of the job
		{m.hosts[0], Msg{From: -1, Epoch: 0}},            // no such host
		{m.hosts[0], Msg{From: 9, Epoch: 0}},             // no such host
	}
	for _, c := range cases {
		if err := f1.Deliver(c.from, c.msg); err == nil {
			t.Errorf("Deliver(%s, %+v) accepted", c.from, c.msg)
		}
	}
	if err := f1.Deliver(m.hosts[3], Msg{From: 3, Epoch: 0}); err != nil {
		t.Fatalf("child's up: %v", err)
	}
	if err := f1.Deliver(m.hosts[3], Msg{From: 3, Epoch: 0}); err == nil {
		t.Error("a child's second up in one barrier was accepted")
	}
	if err := f1.Barrier(context.Background(), 7); err == nil {
		t.Error("a barrier for a rank not here was accepted")
	}
}
