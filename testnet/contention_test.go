package testnet

import (
	"context"
	"strings"
	"testing"
	"time"
)

// maxGap is how long freed slots may stand idle while a job waits for
// them: a waiting job is offered the slots as they free (worker/waitq.go)
// and needs one offer round and the submitter's offer grace (300 ms) to
// start. The old way, a waiting job noticed freed slots at its flood's
// next radius, 1 s doubling: gaps of 2 to 16 s.
const maxGap = 1500 * time.Millisecond

// TestContention is the contention test: K = 2, 4 and 8 jobs of
// n = 5 on 8 one-slot agents, where only one fits at a time, submitted at
// once from different agents. Every job must end done (a deadlock would
// hold both jobs until their scheduling deadline and fail them), and a
// job waiting while another runs must start within maxGap of the slots
// freeing. Makespan and utilization are logged.
func TestContention(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: contention runs 14 jobs one after the other")
	}
	cfg := DefaultContentionConfig()
	// Half a second of sleep: the slots free and the next job's start is
	// measured as with the benchmark's 4 s, in an eighth of the time.
	cfg.Run = 500 * time.Millisecond
	// A deadlock holds jobs until this deadline and fails them; 60 s is
	// far more than the 8 jobs need one after the other.
	cfg.Deadline = time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rounds, err := Contention(ctx, cfg, nil)
	var table strings.Builder
	_ = WriteContentionTable(&table, rounds)
	t.Logf("contention, %d agents x 1 slot, jobs of n=%d running sleep %v:\n%s", cfg.Agents, cfg.N, cfg.Run, table.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rounds {
		for i, g := range r.Gaps() {
			if g > maxGap {
				t.Errorf("K=%d: the job started %d-th waited %.2f s after slots freed, want <= %v", r.K, i+2, g.Seconds(), maxGap)
			}
		}
	}
}
