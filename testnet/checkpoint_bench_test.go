package testnet

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/node"
)

// TestCheckpointFigures prints the checkpoint figures of BENCHMARKS.md (opt-in:
// ZORILLA_CKPT_FIGURES=1, or =loss for the last table only), on 7 in-process agents running real processes
// of examples/heat with 3 ranks:
//
//   - a checkpoint's time and bytes per rank against the state size: one
//     step, one checkpoint, from the job's start to the manifest saying
//     complete (each rank's file written and synced, sent to the
//     submitter and copied to one more agent), less the same job with no
//     checkpoint taken;
//   - heat's time with --checkpoint-every at a few intervals;
//   - the time a host loss costs with and without checkpoints.
func TestCheckpointFigures(t *testing.T) {
	if os.Getenv("ZORILLA_CKPT_FIGURES") == "" {
		t.Skip("set ZORILLA_CKPT_FIGURES=1 for the checkpoint figures")
	}
	ln := startLaunchNet(t, 7, 2, func(i int, cfg *node.Config) {
		cfg.Services.Worker.MaxStage = 2 << 30
	})
	prog := buildExample(t, ln.Nodes[0], "heat")
	if os.Getenv("ZORILLA_CKPT_FIGURES") == "loss" {
		lossFigures(t, ln, prog)
		return
	}
	runHeat := func(args []string, every time.Duration) (job.Record, time.Duration) {
		d := heatJob()
		d.Args, d.CheckpointEvery = args, every
		start := time.Now()
		w := submitJob(t, ln.Nodes[0], d, prog)
		rec := w.wait(t)
		if rec.State != job.Done {
			t.Fatalf("heat %v: %s: %s\n%s", args, rec.State, rec.Reason, w.describe())
		}
		return rec, time.Since(start)
	}
	fmt.Println("one checkpoint, 3 ranks: state per rank, file per rank, from the first file at the submitter to the last")
	for _, mib := range sizesMiB() {
		cells := strconv.Itoa(mib << 20 / 8 * 3)
		pause := strconv.Itoa(1000 + 200*mib) // step 2 waits while the files travel
		rec, _ := runHeat([]string{"2", pause, cells}, 0)
		if len(rec.Checkpoints) == 0 || !rec.Checkpoints[0].Complete {
			t.Fatalf("%d MiB: checkpoint 1 not complete: %+v", mib, rec.Checkpoints)
		}
		c := rec.Checkpoints[0]
		fmt.Printf("  %4d MiB  %10d B  %v\n", mib, c.Bytes()/3, c.Done.Sub(c.Taken).Round(time.Millisecond))
	}
	fmt.Println("heat 100 steps of 20 ms, 3 ranks, 2 MiB per rank, by --checkpoint-every")
	args := []string{"100", "20", strconv.Itoa(1 << 18 * 3)}
	for _, every := range []time.Duration{time.Hour, 2 * time.Second, time.Second, 250 * time.Millisecond} {
		rec, took := runHeat(args, every)
		n := uint64(0)
		if len(rec.Checkpoints) > 0 {
			n = rec.Checkpoints[len(rec.Checkpoints)-1].Num
		}
		fmt.Printf("  every %-6v  %3d checkpoints  %v\n", every, n, took.Round(time.Millisecond))
	}
	lossFigures(t, ln, prog)
	is := buildExample(t, ln.Nodes[0], "is")
	fmt.Println("is class W, 4 ranks, a checkpoint offered after each of its 10 iterations, by --checkpoint-every")
	for _, every := range []time.Duration{time.Hour, time.Second, 0} {
		d := job.NewDescription("is", []string{"W"}, 4)
		d.Strategy, d.CheckpointEvery = job.Spread, every
		d.Require.Labels = []string{poolLabel}
		start := time.Now()
		w := submitJob(t, ln.Nodes[0], d, is)
		rec := w.wait(t)
		if rec.State != job.Done {
			t.Fatalf("is: %s: %s\n%s", rec.State, rec.Reason, w.describe())
		}
		n := uint64(0)
		if len(rec.Checkpoints) > 0 {
			n = rec.Checkpoints[len(rec.Checkpoints)-1].Num
		}
		verified := len(linesMatching(w.updates(), isVerified)) == 1
		fmt.Printf("  every %-6v  %3d checkpoints  %v  verified %v\n", every, n, time.Since(start).Round(time.Millisecond), verified)
	}
}

var isVerified = regexp.MustCompile(`Verification\s+=\s+SUCCESSFUL`)

// lossFigures: heat of 300 steps of 30 ms loses a host 70% into the
// uninterrupted run's time, with a checkpoint at every step and without
// any; the table gives each run's total time.
func lossFigures(t *testing.T, ln *launchNet, prog proto.FileRef) {
	args := []string{"300", "30", "3000"}
	run := func(every time.Duration, killAfter time.Duration) (time.Duration, job.Record) {
		d := heatJob()
		d.Args, d.CheckpointEvery = args, every
		start := time.Now()
		w := submitJob(t, ln.Nodes[0], d, prog)
		if killAfter > 0 {
			w.awaitState(t, job.Running)
			time.Sleep(killAfter - time.Since(start)) // the point of the failure
			rec, err := ln.Nodes[0].Submitter().Get(w.id)
			if err != nil || rec.Plan == nil {
				t.Fatalf("record: %v", err)
			}
			victim := ln.Index(rec.Plan.Hosts[0].Offer.Peer)
			if err := ln.Stop(victim); err != nil {
				t.Fatal(err)
			}
			defer func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if err := ln.Restart(ctx, victim); err != nil {
					t.Fatal(err)
				}
			}()
		}
		rec := w.wait(t)
		if rec.State != job.Done {
			t.Fatalf("heat: %s: %s\n%s", rec.State, rec.Reason, w.describe())
		}
		return time.Since(start), rec
	}
	base, _ := run(time.Hour, 0)
	fmt.Printf("heat 300 steps of 30 ms, 3 ranks; a host lost at %v (70%% of the %v a run takes without loss)\n",
		(base * 7 / 10).Round(time.Millisecond), base.Round(time.Millisecond))
	for _, every := range []time.Duration{time.Hour, time.Second, 0} {
		took, rec := run(every, base*7/10)
		last := rec.Runs[len(rec.Runs)-1]
		fmt.Printf("  every %-6v  total %v  lost %v  second run from checkpoint %d\n", every, took.Round(time.Millisecond),
			(took - base).Round(time.Millisecond), last.From)
	}
}

// sizesMiB are the state sizes of the first table: ZORILLA_CKPT_SIZES
// (e.g. "1,16,64"), or 1 and 16.
func sizesMiB() []int {
	var out []int
	for _, f := range strings.Split(os.Getenv("ZORILLA_CKPT_SIZES"), ",") {
		if n, err := strconv.Atoi(f); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		out = []int{1, 16}
	}
	return out
}
