package testnet

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/job"
)

// The round's figures on a hand-made schedule: three jobs submitted in
// order 0, 1, 2, run 2, 0, 1 with idle gaps of 1 s and 0.5 s, one failed
// job that never started, and one that started just before the last one
// ended (no gap).
func TestContentionRoundFigures(t *testing.T) {
	s := time.Second
	r := ContentionRound{K: 5, Alone: 2 * s, Jobs: []JobSpan{
		{Start: 3 * s, End: 5 * s, State: job.Done},
		{Start: 5500 * time.Millisecond, End: 7500 * time.Millisecond, State: job.Done},
		{Start: 0, End: 2 * s, State: job.Done},
		{End: 6 * s, State: job.Failed},
		{Start: 7400 * time.Millisecond, End: 9500 * time.Millisecond, State: job.Done},
	}}
	if got := r.Makespan(); got != 9500*time.Millisecond {
		t.Errorf("makespan %v", got)
	}
	if got := r.Ideal(); got != 10*s {
		t.Errorf("ideal %v", got)
	}
	if got, want := r.Utilization(), 8.0/9.5; math.Abs(got-want) > 1e-9 {
		t.Errorf("utilization %v, want %v", got, want)
	}
	if got, want := r.Gaps(), []time.Duration{s, 500 * time.Millisecond, 0}; !slices.Equal(got, want) {
		t.Errorf("gaps %v, want %v", got, want)
	}
	if got := r.Inversions(); got != 2 { // job 2 started before 0 and 1
		t.Errorf("inversions %d, want 2", got)
	}
	if got := r.Failed(); got != 1 {
		t.Errorf("failed %d, want 1", got)
	}
}
