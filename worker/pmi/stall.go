package pmi

import (
	"context"
	"sync"
	"time"
)

// KVS is a Job without its Abort: the part Stalls wraps (a Fence).
type KVS interface {
	Put(rank int, key, value string) error
	Get(key string) (string, bool)
	Barrier(ctx context.Context, rank int) error
}

// Stalls wraps a host's KVS to tell when its ranks wait long in a PMI
// barrier after the first (the first is the start's second phase, which
// the start's own timeout bounds): Note is called once per barrier on
// this host, for the first local rank that has waited After in it. It
// only tells: the barrier goes on waiting and nothing is ended, since a
// rank may rightly work on while the others wait (in MPI_Finalize, say).
// It is what a user sees of MPICH 4.0.2's hang in MPI_Finalize over TCP,
// where some ranks never reach Finalize's barrier (README).
type Stalls struct {
	KVS
	After time.Duration // 0: never note
	Note  func(barrier, rank int, waited time.Duration)

	// afterFunc is time.AfterFunc; tests fire the timers themselves.
	afterFunc func(time.Duration, func()) stopper

	mu      sync.Mutex
	entered map[int]int  // barriers each local rank has entered
	noted   map[int]bool // barriers noted on this host
}

type stopper interface{ Stop() bool }

// Barrier implements KVS.
func (s *Stalls) Barrier(ctx context.Context, rank int) error {
	s.mu.Lock()
	if s.entered == nil {
		s.entered, s.noted = map[int]int{}, map[int]bool{}
	}
	b := s.entered[rank]
	s.entered[rank]++
	s.mu.Unlock()
	if b == 0 || s.After <= 0 || s.Note == nil {
		return s.KVS.Barrier(ctx, rank)
	}
	after := s.afterFunc
	if after == nil {
		after = func(d time.Duration, f func()) stopper { return time.AfterFunc(d, f) }
	}
	t := after(s.After, func() {
		s.mu.Lock()
		first := !s.noted[b]
		s.noted[b] = true
		s.mu.Unlock()
		if first {
			s.Note(b, rank, s.After)
		}
	})
	defer t.Stop()
	return s.KVS.Barrier(ctx, rank)
}
