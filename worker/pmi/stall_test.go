package pmi

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// gateJob's barriers wait until the test opens them.
type gateJob struct {
	KVS
	open chan struct{}
}

func (g gateJob) Barrier(ctx context.Context, rank int) error {
	select {
	case <-g.open:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// fakeTimers collects Stalls' timers; the test fires them.
type fakeTimers struct {
	mu     sync.Mutex
	timers []*fakeTimer
	added  chan struct{}
}

type fakeTimer struct {
	f       func()
	stopped bool
}

func (t *fakeTimer) Stop() bool { t.stopped = true; return true }

func (ft *fakeTimers) after(_ time.Duration, f func()) stopper {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	t := &fakeTimer{f: f}
	ft.timers = append(ft.timers, t)
	ft.added <- struct{}{}
	return t
}

// fire runs timer i as its deadline would, unless it was stopped.
func (ft *fakeTimers) fire(i int) {
	ft.mu.Lock()
	t := ft.timers[i]
	ft.mu.Unlock()
	if !t.stopped {
		t.f()
	}
}

// TestStalls: the first barrier is never noted; a later one is noted once
// on the host however many of its ranks wait; a barrier that ended before
// its deadline is not noted; and the barrier itself still waits.
func TestStalls(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ft := &fakeTimers{added: make(chan struct{}, 16)}
	var (
		mu    sync.Mutex
		notes []string
	)
	open := make(chan struct{})
	s := &Stalls{KVS: gateJob{open: open}, After: time.Minute, afterFunc: ft.after,
		Note: func(barrier, rank int, waited time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			notes = append(notes, fmt.Sprintf("barrier %d rank %d %v", barrier, rank, waited))
		}}
	got := func() string {
		mu.Lock()
		defer mu.Unlock()
		return fmt.Sprint(notes)
	}
	wait := func(n int) {
		for range n {
			select {
			case <-ft.added:
			case <-ctx.Done():
				t.Fatal("no timer set")
			}
		}
	}
	// Barrier 0 of ranks 0 and 1: released at once, no timer at all.
	close(open)
	for rank := range 2 {
		if err := s.Barrier(ctx, rank); err != nil {
			t.Fatal(err)
		}
	}
	if len(ft.timers) != 0 {
		t.Fatalf("%d timers for the first barrier, want none", len(ft.timers))
	}
	// Barrier 1 of rank 0 ends before its deadline: its timer, fired
	// late, notes nothing.
	if err := s.Barrier(ctx, 0); err != nil {
		t.Fatal(err)
	}
	wait(1)
	ft.fire(0)
	if g := got(); g != "[]" {
		t.Fatalf("notes %s for a barrier that ended in time", g)
	}
	// Barrier 1 of rank 1 and barrier 2 of rank 0 wait.
	gate := make(chan struct{})
	s.KVS = gateJob{open: gate}
	errs := make(chan error, 2)
	for _, rank := range []int{1, 0} {
		go func() { errs <- s.Barrier(ctx, rank) }()
		wait(1)
	}
	ft.fire(1)
	ft.fire(2)
	ft.fire(2) // a deadline fires once; twice still notes once
	if g, want := got(), "[barrier 1 rank 1 1m0s barrier 2 rank 0 1m0s]"; g != want {
		t.Fatalf("notes %s, want %s", g, want)
	}
	select {
	case err := <-errs:
		t.Fatalf("a barrier returned (%v) before every rank entered it", err)
	default:
	}
	close(gate)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
