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

	"github.com/zorilla-p2p/zorilla/internal/gang"
	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/job/submitter"
	"github.com/zorilla-p2p/zorilla/node"
)

// TestOutOfCoreFigures prints the out-of-core comparison (opt-in:
// ZORILLA_OOC_FIGURES=1): three heat jobs of 4 ranks on the same 4
// in-process agents, one rank of each job per agent, whose memory is
// bound per host: agent i's job cgroups nest below the cgroup
// ZORILLA_OOC_CGROUP/host<i> (proc.Config.CgroupParent), which the caller
// made in the memory, cpu and pids hierarchies (v1) and bounded, with a
// swap device active (BENCHMARKS.md has the script). The agents
// themselves stay outside the bound: they never page.
//
// Rows (ZORILLA_OOC_ROWS, comma separated, in this order): batch (one
// job after the other: the solo reference), co (all at once, the OS
// schedules and pages), gang (aligned slices, SIGSTOP or the freezer: the
// stopped jobs stay in memory), hybrid (the submitter's RunSwapped, sets
// {0, 1} and {2}, sequential policy) and swap (the agents' own swap by
// checkpoint: each job declares its memory, the hosts lend two and a
// half jobs' worth). For each row: total and per-job times, the slowdown
// against batch, the hosts' peak memory (memory.max_usage_in_bytes, the
// largest of the four), the peak swap and the major faults of the whole.
// A row whose jobs do not all end done within ZORILLA_OOC_ROW_LIMIT is
// reported as such, its jobs cancelled, and the next row runs.
func TestOutOfCoreFigures(t *testing.T) {
	if os.Getenv("ZORILLA_OOC_FIGURES") == "" {
		t.Skip("set ZORILLA_OOC_FIGURES=1 (and ZORILLA_OOC_CGROUP) for the out-of-core figures")
	}
	cg := os.Getenv("ZORILLA_OOC_CGROUP")
	if cg == "" || !strings.HasPrefix(cg, "/") {
		t.Fatal("ZORILLA_OOC_CGROUP: the cgroup path (e.g. /zorilla-ooc) holding host0..host3")
	}
	mem := filepath.Join("/sys/fs/cgroup/memory", cg)
	for h := range 4 {
		if _, err := os.Stat(filepath.Join(mem, fmt.Sprintf("host%d", h))); err != nil {
			t.Fatalf("the hosts' cgroups: %v", err)
		}
	}
	steps := envOr("ZORILLA_OOC_STEPS", "300")
	cells, err := strconv.Atoi(envOr("ZORILLA_OOC_CELLS", "16000000"))
	if err != nil {
		t.Fatal(err)
	}
	slice, err1 := time.ParseDuration(envOr("ZORILLA_OOC_SLICE", "20s"))
	gslice, err2 := time.ParseDuration(envOr("ZORILLA_OOC_GANG_SLICE", "2s"))
	limit, err3 := time.ParseDuration(envOr("ZORILLA_OOC_ROW_LIMIT", "10m"))
	// The sequential policy's wait before the incoming set resumes.
	gap, err4 := time.ParseDuration(envOr("ZORILLA_OOC_GAP", "10s"))
	// The agents swap out only a job that has saved a checkpoint on them:
	// the swap row's jobs take one this often (the other rows' only when
	// stopped, as in the MPICH-V hybrid scheduling comparison).
	swapEvery, err5 := time.ParseDuration(envOr("ZORILLA_OOC_SWAP_CHECKPOINT", "10s"))
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || err5 != nil {
		t.Fatal(err1, err2, err3, err4, err5)
	}
	want := strings.Split(envOr("ZORILLA_OOC_ROWS", "batch,co,gang,hybrid,swap"), ",")
	const jobs, ranks = 3, 4
	// A rank's declaration (its own cgroup's bound, swap included): heat
	// holds some 32 B a cell of its part at its end, plus the runtime's.
	per := int64(cells/ranks)*48 + 128<<20
	mk := func(gangOn, narrow bool) (*launchNet, proto.FileRef) {
		ln := startLaunchNet(t, 7, jobs, func(i int, cfg *node.Config) {
			cfg.MaxProcs, cfg.MaxJobs, cfg.Cores = 1, jobs, jobs
			cfg.Memory = int64(jobs) * per
			if narrow {
				cfg.Memory = 5 * per / 2 // two jobs' declarations fit, three do not
			}
			cfg.Services.Worker.MaxStage = 2 << 30
			if i > 2 { // the pool: agents 3..6 host the jobs
				cfg.Services.Proc.CgroupParent = fmt.Sprintf("%s/host%d", cg, i-3)
			}
			if gangOn {
				cfg.Services.Worker.Gang = gang.Config{Slice: gslice, Columns: jobs}
			}
		})
		return ln, buildExample(t, ln.Nodes[0], "heat")
	}
	// Rare checkpoints but in the swap row: a stop takes its own at the
	// next step; periodic ones would only add writes.
	desc := func(swapSlice time.Duration) func(int) job.Description {
		return func(i int) job.Description {
			d := job.NewDescription("heat", []string{steps, "0", strconv.Itoa(cells + 3*i)}, ranks)
			d.Strategy, d.Retries = job.Spread, 2
			d.Require.Labels = []string{poolLabel}
			// Rare checkpoints: a swap's stop takes its own at the next
			// step; periodic ones would only add writes.
			d.CheckpointEvery, d.Deadline = 10*time.Minute, 30*time.Minute
			d.MemPerProc, d.SwapSlice = per, swapSlice
			if swapSlice > 0 {
				d.CheckpointEvery = swapEvery
			}
			return d
		}
	}
	hybrid := &swapPlan{&submitter.Swap{Rotation: gang.Config{Slice: slice, Columns: 2}, Policy: gang.Sequential,
		Gap: gap, StopTimeout: time.Minute, Poll: 100 * time.Millisecond}, [][]int{{0, 1}, {2}}}
	var rows []oocRow
	run := func(key, name string, ln *launchNet, prog proto.FileRef, d func(int) job.Description, sp *swapPlan, serial bool) {
		if !contains(want, key) {
			return
		}
		rows = append(rows, oocMeasure(t, mem, name, func() (timeshareRow, error) {
			return oocRun(t, ln, prog, d, jobs, name, sp, serial, limit)
		}))
	}
	if contains(want, "batch") || contains(want, "co") || contains(want, "hybrid") {
		wide, prog := mk(false, false)
		run("batch", "batch (one after the other)", wide, prog, desc(0), nil, true)
		run("co", "co-scheduling", wide, prog, desc(0), nil, false)
		run("hybrid", fmt.Sprintf("hybrid: sets {0,1} {2} swapped by checkpoint, %v slices, sequential", slice),
			wide, prog, desc(0), hybrid, false)
		_ = wide.Close() // one network of agents at a time on this machine
	}
	if contains(want, "gang") {
		g, prog := mk(true, false)
		run("gang", fmt.Sprintf("gang (%v slices)", gslice), g, prog, desc(0), nil, false)
		_ = g.Close()
	}
	if contains(want, "swap") {
		n, prog := mk(false, true)
		run("swap", fmt.Sprintf("agents' swap by checkpoint (%v slices)", slice), n, prog, desc(slice), nil, false)
		_ = n.Close()
	}
	bound := readTrim(filepath.Join(mem, "host0", "memory.limit_in_bytes"))
	t.Logf("\nheat %s 0 %d (+3 a job), %d ranks per job (%d MiB declared each), %d jobs on 4 agents, bound %s per host\n%s",
		steps, cells, ranks, per>>20, jobs, bound, oocTable(rows))
	if out := os.Getenv("ZORILLA_OOC_SVG"); out != "" && len(rows) > 0 {
		n, _ := strconv.ParseInt(bound, 10, 64)
		title := fmt.Sprintf("3 heat jobs (%d cells, %s steps) on 4 hosts of %d MiB each", cells, steps, n>>20)
		var b strings.Builder
		if err := writeOOCSVG(&b, title, rows); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

type oocRow struct {
	timeshareRow
	err                  error
	hostPeak, swap, majf int64
}

// oocMeasure runs one row and reads what the cgroups saw meanwhile.
func oocMeasure(t *testing.T, mem, name string, f func() (timeshareRow, error)) oocRow {
	for h := range 4 {
		_ = os.WriteFile(filepath.Join(mem, fmt.Sprintf("host%d", h), "memory.max_usage_in_bytes"), []byte("0"), 0)
	}
	f0 := cgroupStat(mem, "total_pgmajfault")
	stop := watchPeak(mem, "total_swap")
	tr, err := f()
	r := oocRow{timeshareRow: tr, err: err, swap: stop(), majf: cgroupStat(mem, "total_pgmajfault") - f0}
	r.name = name
	for h := range 4 {
		v, _ := strconv.ParseInt(readTrim(filepath.Join(mem, fmt.Sprintf("host%d", h), "memory.max_usage_in_bytes")), 10, 64)
		r.hostPeak = max(r.hostPeak, v)
	}
	t.Logf("%s: total %v, per job %v, host peak %d MiB, swap peak %d MiB, major faults %d, err %v",
		name, r.total, r.perJob, r.hostPeak>>20, r.swap>>20, r.majf, err)
	return r
}

// oocTable is the rows as a markdown table, slowdowns against the first.
func oocTable(rows []oocRow) string {
	var b strings.Builder
	b.WriteString("| technique | total | per-job time | slowdown (time / solo) | host peak | peak swap | major faults |\n|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		var pj, slow []string
		for i, d := range r.perJob {
			pj = append(pj, d.Round(100*time.Millisecond).String())
			if solo := rows[0].perJob[i]; solo > 0 && d > 0 {
				slow = append(slow, fmt.Sprintf("%.2f", d.Seconds()/solo.Seconds()))
			}
		}
		total := r.total.Round(100 * time.Millisecond).String()
		if r.err != nil {
			total = "not done: " + r.err.Error()
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %d MiB | %d MiB | %d |\n", r.name, total,
			strings.Join(pj, ", "), strings.Join(slow, ", "), r.hostPeak>>20, r.swap>>20, r.majf)
	}
	return b.String()
}

// oocRun submits the jobs (one after the other with serial, else all at
// once, under sp's rotation when given), times each from its submission
// to its end done, and the whole. A job not done within limit ends the
// row with an error; its jobs are cancelled and awaited.
func oocRun(t *testing.T, ln *launchNet, prog proto.FileRef, desc func(int) job.Description, jobs int,
	name string, sp *swapPlan, serial bool, limit time.Duration) (timeshareRow, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	sub := ln.Nodes[0].Submitter()
	row := timeshareRow{name: name, perJob: make([]time.Duration, jobs)}
	var ids []job.ID
	defer func() {
		for j, id := range ids {
			t.Logf("%s, job %d %s:\n%s", name, j, id, describeRecord(sub, id))
		}
		oocCancel(sub, ids)
	}()
	begin := time.Now()
	errs := make(chan error, jobs)
	var first error
	for j := range jobs {
		d := desc(j)
		d.SetDefaults()
		start := time.Now()
		id, err := sub.Submit(submitter.Submission{Desc: d, Program: prog})
		if err != nil {
			first = err
			break
		}
		ids = append(ids, id)
		wait := func() error {
			rec, err := oocAwait(ctx, ln, sub, id, sp, j)
			if err == nil && rec.State != job.Done {
				err = fmt.Errorf("job %d ended %s: %s", j, rec.State, rec.Reason)
			}
			row.perJob[j] = time.Since(start)
			return err
		}
		if !serial {
			go func() { errs <- wait() }()
		} else if first = wait(); first != nil {
			break
		}
	}
	if !serial {
		for range ids { // every waiter ends: the row's context bounds them
			if err := <-errs; err != nil && first == nil {
				first = err
				cancel()
			}
		}
	}
	row.total = time.Since(begin)
	return row, first
}

// oocAwait waits for job id's end: driven through sp's rotation when
// given, else until its record is over (not merely stopped for a swap).
func oocAwait(ctx context.Context, ln *launchNet, sub *submitter.Submitter, id job.ID, sp *swapPlan, j int) (job.Record, error) {
	if sp != nil {
		w := *sp.sw
		for s, members := range sp.sets {
			if contains(members, j) {
				w.Set = s
			}
		}
		rec, _, err := sub.RunSwapped(ctx, id, w)
		return rec, err
	}
	var rec job.Record
	err := ln.Await(ctx, "job "+string(id)+" over", func() bool {
		r, err := sub.Get(id)
		rec = r
		return err == nil && r.State.Terminal() && r.State != job.Stopped
	})
	return rec, err
}

// oocCancel ends the jobs of a row that are not over, and waits (a
// minute at most) until they are, so the next row starts on idle hosts.
func oocCancel(sub *submitter.Submitter, ids []job.ID) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, id := range ids {
		if rec, err := sub.Get(id); err == nil && rec.State.Terminal() && rec.State != job.Stopped {
			continue
		}
		_ = sub.Cancel(id, "the figure's row is over")
		_, _ = awaitRecordEnd(ctx, sub, id)
	}
}

func contains[T comparable](s []T, v T) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func readTrim(path string) string {
	b, _ := os.ReadFile(path)
	return strings.TrimSpace(string(b))
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
