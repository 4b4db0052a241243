package testnet

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/internal/gang"
	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/job/submitter"
	"github.com/zorilla-p2p/zorilla/node"
)

// TestTimeSharingFigures prints the time-sharing table (opt-in:
// ZORILLA_TIMESHARE_FIGURES=1): three heat jobs of 3 ranks on the same 4
// in-process agents, declared so that two fit in the hosts' memory and
// three do not, run one after the other (batch, the reference), all at
// once co-scheduled by the OS, gang-scheduled on aligned slices, and by the
// hybrid technique (two sets switched by checkpoint) under both policies:
// total time (first submit to last end) and each job's slowdown (its time
// from submit to end over its solo time).
func TestTimeSharingFigures(t *testing.T) {
	if os.Getenv("ZORILLA_TIMESHARE_FIGURES") == "" {
		t.Skip("set ZORILLA_TIMESHARE_FIGURES=1 for the time-sharing figures")
	}
	args := strings.Fields(envOr("ZORILLA_TIMESHARE_HEAT", "600 0 400000"))
	const jobs = 3
	mk := func(gangOn bool) (*launchNet, proto.FileRef) {
		ln := startLaunchNet(t, 7, jobs, func(_ int, cfg *node.Config) {
			cfg.MaxProcs = 1
			cfg.Services.Worker.MaxStage = 2 << 30
			if gangOn {
				cfg.Services.Worker.Gang = gang.Config{Slice: time.Second, Columns: jobs}
			}
		})
		return ln, buildExample(t, ln.Nodes[0], "heat")
	}
	desc := func(i int) job.Description {
		a := slices.Clone(args)
		if n, err := strconv.Atoi(a[len(a)-1]); err == nil {
			a[len(a)-1] = strconv.Itoa(n + 3*i) // no two jobs share checkpoint bytes (see swap_e2e_test.go)
		}
		d := job.NewDescription("heat", a, 3)
		d.Strategy, d.Retries = job.Spread, 2
		d.Require.Labels = []string{poolLabel}
		d.CheckpointEvery = time.Second
		return d
	}
	var rows []timeshareRow
	plain, prog := mk(false)
	batch := timeshareRun(t, plain, prog, desc, jobs, "batch (one after the other)", nil, true)
	solo := batch.perJob
	rows = append(rows, batch)
	rows = append(rows, timeshareRun(t, plain, prog, desc, jobs, "co-scheduling", nil, false))
	sets := gang.SwapSets(5, []int64{2, 2, 2}) // two fit, three do not
	for _, p := range []gang.Policy{gang.Sequential, gang.Overlapped} {
		sw := &submitter.Swap{Rotation: gang.Config{Slice: 6 * time.Second, Columns: len(sets)}, Policy: p,
			Gap: time.Second, StopTimeout: 20 * time.Second, Poll: 50 * time.Millisecond}
		rows = append(rows, timeshareRun(t, plain, prog, desc, jobs, "hybrid, "+p.String(), &swapPlan{sw, sets}, false))
	}
	_ = plain.Close() // one network of agents at a time on this machine
	gangNet, gprog := mk(true)
	rows = append(rows, timeshareRun(t, gangNet, gprog, desc, jobs, "gang (1 s slices)", nil, false))
	var b strings.Builder
	fmt.Fprintf(&b, "heat %s, 3 ranks per job, %d jobs on 4 agents\n", strings.Join(args, " "), jobs)
	fmt.Fprintf(&b, "| technique | total | per-job time | slowdown (time / solo) |\n|---|---|---|---|\n")
	for _, r := range rows {
		var per, slow []string
		for i, d := range r.perJob {
			per = append(per, d.Round(100*time.Millisecond).String())
			slow = append(slow, fmt.Sprintf("%.2f", d.Seconds()/solo[i].Seconds()))
		}
		fmt.Fprintf(&b, "| %s | %v | %s | %s |\n", r.name, r.total.Round(100*time.Millisecond),
			strings.Join(per, ", "), strings.Join(slow, ", "))
	}
	t.Log("\n" + b.String())
}

type timeshareRow struct {
	name   string
	total  time.Duration
	perJob []time.Duration
}

type swapPlan struct {
	sw   *submitter.Swap
	sets [][]int
}

// timeshareRun runs the jobs (one after the other with serial, else all
// at once, under sp's swap rotation when given) and times them.
func timeshareRun(t *testing.T, ln *launchNet, prog proto.FileRef, desc func(int) job.Description, jobs int,
	name string, sp *swapPlan, serial bool) timeshareRow {
	t.Helper()
	setOf := map[int]int{}
	if sp != nil {
		for s, members := range sp.sets {
			for _, j := range members {
				setOf[j] = s
			}
		}
	}
	await := func(ctx context.Context, sub *submitter.Submitter, j int, id job.ID) (job.Record, error) {
		if sp == nil {
			return awaitRecordEnd(ctx, sub, id)
		}
		w := *sp.sw
		w.Set = setOf[j]
		rec, _, err := sub.RunSwapped(ctx, id, w)
		return rec, err
	}
	return timedRun(t, ln, prog, desc, jobs, name, serial, 10*time.Minute, await)
}

// timedRun submits the jobs (one after the other with serial, else all at
// once), waits for each with await, and times each from its submission to
// its end, and the whole. A job that does not end done fails the test.
func timedRun(t *testing.T, ln *launchNet, prog proto.FileRef, desc func(int) job.Description, jobs int,
	name string, serial bool, limit time.Duration,
	await func(ctx context.Context, sub *submitter.Submitter, j int, id job.ID) (job.Record, error)) timeshareRow {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	sub := ln.Nodes[0].Submitter()
	row := timeshareRow{name: name, perJob: make([]time.Duration, jobs)}
	begin := time.Now()
	done := make(chan error, jobs)
	for j := range jobs {
		d := desc(j)
		d.SetDefaults()
		start := time.Now()
		id, err := sub.Submit(submitter.Submission{Desc: d, Program: prog})
		if err != nil {
			t.Fatal(err)
		}
		wait := func() error {
			rec, err := await(ctx, sub, j, id)
			if err == nil && rec.State != job.Done {
				err = fmt.Errorf("job %d ended %s: %s", j, rec.State, rec.Reason)
			}
			row.perJob[j] = time.Since(start)
			return err
		}
		if serial {
			if err := wait(); err != nil {
				t.Fatal(err)
			}
			continue
		}
		go func() { done <- wait() }()
	}
	if !serial {
		for range jobs {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
	}
	row.total = time.Since(begin)
	t.Logf("%s: total %v, per job %v", name, row.total, row.perJob)
	return row
}

// awaitRecordEnd waits until job id is over and returns its record.
func awaitRecordEnd(ctx context.Context, sub *submitter.Submitter, id job.ID) (job.Record, error) {
	var end *job.Record
	err := sub.Watch(ctx, id, 0, func(u job.Update) error {
		if u.Kind == "end" {
			end = u.Record
		}
		return nil
	})
	if err == nil && end == nil {
		err = fmt.Errorf("job %s: watch ended without its end", id)
	}
	if err != nil {
		return job.Record{}, err
	}
	return *end, nil
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
