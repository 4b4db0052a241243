package sim

import (
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"
)

// faultyConfig is a run of the many-seed test: 300 agents, every fault
// kind on at its default rate; one seed in eight on the Grid'5000 sites,
// the others on the synthetic internet.
func faultyConfig(t testing.TB, seed uint64) Config {
	t.Helper()
	cfg := DefaultConfig(300, 12, seed)
	if seed%8 == 0 {
		cfg.Topology = "grid5000"
	}
	f, err := DefaultFaults([]string{"all"})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Faults = f
	cfg.Submit, cfg.Duration = 2*time.Minute, 8*time.Minute
	return cfg
}

func run(t testing.TB, cfg Config) Result {
	t.Helper()
	w, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return w.Run()
}

// TestInvariantsHoldOverSeeds runs 200 seeds of 300 agents with every
// fault kind on; every invariant must hold in each. A failure names the
// seed and the command that replays it.
func TestInvariantsHoldOverSeeds(t *testing.T) {
	const seeds = 200
	// The worlds are small and many: collect garbage less often.
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	results := make([]Result, seeds)
	var wg sync.WaitGroup
	next := make(chan uint64)
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range next {
				results[s] = run(t, faultyConfig(t, s+1))
			}
		}()
	}
	for s := range uint64(seeds) {
		next <- s
	}
	close(next)
	wg.Wait()
	ended := map[string]int{}
	for _, r := range results {
		if r.Violation != nil {
			t.Errorf("seed %d: %s\nreplay: %s", r.Config.Seed, r.Violation, r.Replay)
		}
		for k, n := range r.Ended {
			ended[k] += n
		}
	}
	t.Logf("jobs over %d seeds: %v", seeds, ended)
	if ended["done"] == 0 {
		t.Fatalf("no job completed in %d seeds: %v", seeds, ended)
	}
}

func TestSameSeedSameDigest(t *testing.T) {
	a, b := run(t, faultyConfig(t, 11)), run(t, faultyConfig(t, 11))
	if a.Digest != b.Digest {
		t.Fatalf("seed 11 twice: digests %s and %s", a.Digest, b.Digest)
	}
	if c := run(t, faultyConfig(t, 12)); c.Digest == a.Digest {
		t.Fatalf("seeds 11 and 12 give the same digest %s", a.Digest)
	}
}

// TestSeededBugIsCaught: a worker that never ends the lease of a job
// whose processes are gone is caught, with the seed and its replay.
func TestSeededBugIsCaught(t *testing.T) {
	cfg := DefaultConfig(300, 10, 1)
	cfg.Duration = 5 * time.Minute
	cfg.Hooks.KeepLeaseAfterRun = true
	r := run(t, cfg)
	if r.Violation == nil {
		t.Fatal("a lease kept after its job's processes ended went unnoticed")
	}
	if !strings.Contains(r.Violation.What, "no process of it left") || !strings.Contains(r.Replay, "--seed 1") {
		t.Fatalf("violation %q, replay %q: want the kept lease and the seed", r.Violation.What, r.Replay)
	}
}

// TestFenceKeepsARankFromRunningTwice replays seeds 2 and 3, where sites
// are cut off between hosts that run ranks of jobs without replicas and
// the jobs' submitters: a submitter counts such a host lost, or gives
// it up when the run ends, and starts the job again elsewhere, while the
// cut-off worker, which cannot tell the cut from its submitter
// restarting, keeps its copies for its grace (a minute). Its fence
// freezes them first: no rank runs twice. Without the workers' fence, in
// seed 2 rank 8 of a job does.
func TestFenceKeepsARankFromRunningTwice(t *testing.T) {
	for _, seed := range []uint64{2, 3} {
		cfg := DefaultConfig(300, 40, seed)
		f, err := DefaultFaults([]string{"all"})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Faults = f
		if r := run(t, cfg); r.Violation != nil {
			t.Fatalf("seed %d: %v", seed, r.Violation)
		}
		if seed != 2 {
			continue
		}
		cfg.Hooks.NoFence = true
		r := run(t, cfg)
		if r.Violation == nil || !strings.Contains(r.Violation.What, "rank 8 runs twice at once") {
			t.Fatalf("seed 2 without the workers' fence: violation %v, want rank 8 run twice", r.Violation)
		}
	}
}

// TestLostResumeAnswerIsAskedAgain replays seed 191 of the many-seed
// test: a submitter restarts, and one host's answer to whether it still
// runs a replicated job is lost. Taken for a no, it failed the job while
// the host ran its rank's other copy; asked again, the job goes on.
func TestLostResumeAnswerIsAskedAgain(t *testing.T) {
	if r := run(t, faultyConfig(t, 191)); r.Violation != nil {
		t.Fatalf("seed 191: %v\nreplay: %s", r.Violation, r.Replay)
	}
}
