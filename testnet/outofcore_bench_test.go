package testnet

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/node"
	"github.com/zorilla-p2p/zorilla/worker/gang"
)

// TestOutOfCoreFigures prints issue 19's out-of-core comparison (opt-in:
// ZORILLA_OOC_FIGURES=1): three heat jobs of 4 ranks on the same 4
// in-process agents whose real memory exceeds what the test process may
// hold, co-scheduled by the OS (which pages), gang-scheduled (SIGSTOP: the
// stopped jobs stay in memory, paged out), and swapped by the agents
// themselves by checkpoint (each job declares its memory so that two fit
// on a host, and a swap slice), with the batch (one after the other) as
// the reference. The bound is the memory cgroup (v1) the test runs in,
// named by ZORILLA_OOC_CGROUP, with a swap device active; the test reads
// the cgroup's peak swap use and its major page faults for each row. Set
// up, and torn down, by the caller (BENCHMARKS.md has the commands).
func TestOutOfCoreFigures(t *testing.T) {
	if os.Getenv("ZORILLA_OOC_FIGURES") == "" {
		t.Skip("set ZORILLA_OOC_FIGURES=1 (and ZORILLA_OOC_CGROUP) for issue 19's out-of-core figures")
	}
	cg := os.Getenv("ZORILLA_OOC_CGROUP")
	steps := envOr("ZORILLA_OOC_STEPS", "150")
	cells, err := strconv.Atoi(envOr("ZORILLA_OOC_CELLS", "24000000"))
	if err != nil {
		t.Fatal(err)
	}
	// A rank's declaration (its cgroup's bound): measured, rank 0 holds
	// up to about 23 B a cell of the whole job at its end (it gathers the
	// result) on top of its part, and every rank some 15 MB of runtime.
	per := int64(cells)*40 + 320<<20
	slice, err := time.ParseDuration(envOr("ZORILLA_OOC_SLICE", "8s"))
	if err != nil {
		t.Fatal(err)
	}
	rounds, _ := strconv.Atoi(envOr("ZORILLA_OOC_ROUNDS", "2"))
	every, err := time.ParseDuration(envOr("ZORILLA_OOC_CHECKPOINT_EVERY", "20s"))
	if err != nil {
		t.Fatal(err)
	}
	const jobs = 3
	// Every job declares per for each rank (its cgroup's bound). The
	// agents of the swap lend 2.5 ranks' worth: two jobs fit, the third
	// waits for a swap. Those of co-scheduling and gang scheduling lend
	// enough for all three: the OS pages.
	mk := func(gangOn, narrow bool) (*launchNet, job.FileRef) {
		ln := startLaunchNet(t, 7, jobs, func(_ int, cfg *node.Config) {
			cfg.MaxProcs, cfg.MaxJobs, cfg.Cores = 1, jobs, jobs
			cfg.Memory = int64(jobs) * per
			if narrow {
				cfg.Memory = 5 * per / 2
			}
			cfg.Services.Worker.MaxStage = 2 << 30
			if gangOn {
				cfg.Services.Worker.Gang = gang.Config{Slice: time.Second, Columns: jobs}
			}
		})
		return ln, buildExample(t, ln.Nodes[0], "heat")
	}
	desc := func(declare bool) func(int) job.Description {
		return func(i int) job.Description {
			d := job.NewDescription("heat", []string{steps, "0", strconv.Itoa(cells + 3*i)}, 4)
			d.Strategy, d.Retries = job.Spread, 2
			d.Require.Labels = []string{poolLabel}
			// Rare checkpoints: a swap's stop takes its own at the next
			// step; periodic ones would only add writes.
			d.CheckpointEvery, d.Deadline = every, 10*time.Minute
			d.MemPerProc, d.SwapSlice = per, 0
			if declare {
				d.SwapSlice = slice
			}
			return d
		}
	}
	type row struct {
		name         string
		total        []time.Duration
		perJob       [][]time.Duration
		swapMB, majf []int64
	}
	rows := map[string]*row{}
	var order []string
	measure := func(name string, f func() timeshareRow) {
		r := rows[name]
		if r == nil {
			r = &row{name: name}
			rows[name] = r
			order = append(order, name)
		}
		f0 := cgroupStat(cg, "total_pgmajfault")
		stop := watchPeak(cg, "total_swap")
		tr := f()
		r.swapMB = append(r.swapMB, stop()>>20)
		r.majf = append(r.majf, cgroupStat(cg, "total_pgmajfault")-f0)
		r.total = append(r.total, tr.total)
		r.perJob = append(r.perJob, tr.perJob)
	}
	// One network of agents at a time on this machine.
	wide, prog := mk(false, false)
	for range rounds {
		measure("batch (one after the other)", func() timeshareRow {
			return oocRun(t, wide, prog, desc(false), jobs, "batch", true)
		})
		measure("co-scheduling", func() timeshareRow {
			return oocRun(t, wide, prog, desc(false), jobs, "co-scheduling", false)
		})
	}
	_ = wide.Close()
	narrow, nprog := mk(false, true)
	for range rounds {
		measure("agents' swap by checkpoint ("+slice.String()+" slices)", func() timeshareRow {
			return oocRun(t, narrow, nprog, desc(true), jobs, "swap", false)
		})
	}
	_ = narrow.Close()
	if os.Getenv("ZORILLA_OOC_GANG") != "" {
		gangNet, gprog := mk(true, false)
		for range rounds {
			measure("gang (1 s slices, SIGSTOP)", func() timeshareRow {
				return oocRun(t, gangNet, gprog, desc(false), jobs, "gang", false)
			})
		}
	}
	solo := rows[order[0]].perJob
	var b strings.Builder
	fmt.Fprintf(&b, "heat %s 0 %d, 4 ranks per job (%d MiB each), %d jobs on 4 agents, cgroup %s\n",
		steps, cells, per>>20, jobs, cg)
	fmt.Fprintf(&b, "| technique | round | total | per-job time | slowdown (time / solo) | peak swap | major faults |\n|---|---|---|---|---|---|---|\n")
	for _, name := range order {
		r := rows[name]
		for k := range r.total {
			var pj, slow []string
			for i, d := range r.perJob[k] {
				pj = append(pj, d.Round(100*time.Millisecond).String())
				slow = append(slow, fmt.Sprintf("%.2f", d.Seconds()/solo[k][i].Seconds()))
			}
			fmt.Fprintf(&b, "| %s | %d | %v | %s | %s | %d MiB | %d |\n", name, k+1, r.total[k].Round(100*time.Millisecond),
				strings.Join(pj, ", "), strings.Join(slow, ", "), r.swapMB[k], r.majf[k])
		}
	}
	t.Log("\n" + b.String())
}

// cgroupStat reads one counter of the memory cgroup's memory.stat; 0
// without a cgroup.
func cgroupStat(cg, key string) int64 {
	if cg == "" {
		return 0
	}
	f, err := os.Open(filepath.Join(cg, "memory.stat"))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), " "); ok && k == key {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

// watchPeak samples a memory.stat counter every 200 ms until stop, which
// returns the highest value seen.
func watchPeak(cg, key string) func() int64 {
	var peak int64
	var mu sync.Mutex
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			v := cgroupStat(cg, key)
			mu.Lock()
			peak = max(peak, v)
			mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() int64 {
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}

// oocRun runs the jobs (one after the other with serial, else all at
// once) and times each from its submission to its end: done, after as
// many swaps as the agents made.
func oocRun(t *testing.T, ln *launchNet, prog job.FileRef, desc func(int) job.Description, jobs int,
	name string, serial bool) timeshareRow {
	t.Helper()
	await := func(ctx context.Context, sub *job.Submitter, _ int, id job.ID) (job.Record, error) {
		var rec job.Record
		err := ln.Await(ctx, "job "+string(id)+" over", func() bool {
			r, err := sub.Get(id)
			rec = r
			return err == nil && r.State.Terminal() && r.State != job.Stopped
		})
		return rec, err
	}
	return timedRun(t, ln, prog, desc, jobs, name, serial, 20*time.Minute, await)
}
