package testnet

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/internal/gang"
	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/job/submitter"
	"github.com/zorilla-p2p/zorilla/node"
)

// The hybrid technique: three heat jobs whose memory does not
// fit on the hosts together (two do) take turns in two sets on long
// slices, switched by coordinated checkpoint; each ends with the result of
// a solo run.

// swapHeat is job i of these tests: 3 ranks of heat, 80 steps of 50 ms
// (4 s alone), a checkpoint offered at every step. Each job has a line of
// its own length (every rank's block too), so no two jobs' checkpoint
// files are the same bytes
// (the blob store is content-addressed, and the checkpoint files of one
// job are dropped as it moves on).
func swapHeat(i int) job.Description {
	d := job.NewDescription("heat", []string{"80", "50", strconv.Itoa(3000 + 3*i)}, 3)
	d.Strategy, d.Retries = job.Spread, 2
	d.Require.Labels = []string{poolLabel}
	return d
}

func TestSwapByCheckpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("7 agents, real processes, checkpoints, long slices")
	}
	ln := startLaunchNet(t, 7, 3, func(_ int, cfg *node.Config) {
		cfg.MaxProcs = 1 // one rank of a job per host: three jobs fit in slots, not in "memory"
	})
	prog := buildExample(t, ln.Nodes[0], "heat")
	var ref []string // each job's result alone
	for i := range 3 {
		d := swapHeat(i)
		d.Args[1] = "0" // no pause: the same result, sooner
		solo := submitJob(t, ln.Nodes[0], d, prog)
		if rec := solo.wait(t); rec.State != job.Done {
			t.Fatalf("solo run %d ended %s: %s", i, rec.State, rec.Reason)
		}
		ref = append(ref, heatSum(t, solo))
	}

	// Each job declares 1 unit of memory and the hosts lend 2.5: two fit.
	sets := gang.SwapSets(5, []int64{2, 2, 2})
	if len(sets) != 2 {
		t.Fatalf("swap sets %v, want two", sets)
	}
	for _, p := range []gang.Policy{gang.Sequential, gang.Overlapped} {
		t.Run(p.String(), func(t *testing.T) { testSwap(t, ln, prog, sets, p, ref) })
	}
}

func testSwap(t *testing.T, ln *launchNet, prog proto.FileRef, sets [][]int, p gang.Policy, ref []string) {
	sw := submitter.Swap{Rotation: gang.Config{Slice: 5 * time.Second, Columns: len(sets)}, Policy: p,
		Gap: time.Second, StopTimeout: 10 * time.Second, Poll: 50 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	type result struct {
		rec    job.Record
		events []submitter.SwapStep
		err    error
	}
	var ids []job.ID
	var order []int // the heat job (swapHeat's i) of each of ids
	results := make(chan result, 3)
	sub := ln.Nodes[0].Submitter()
	for set, members := range sets {
		for _, i := range members {
			d := swapHeat(i)
			d.SetDefaults()
			id, err := sub.Submit(submitter.Submission{Desc: d, Program: prog})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
			order = append(order, i)
			w := sw
			w.Set = set
			go func() {
				rec, ev, err := sub.RunSwapped(ctx, id, w)
				results <- result{rec, ev, err}
			}()
		}
	}
	stops := 0
	for range ids {
		r := <-results
		if r.err != nil || r.rec.State != job.Done {
			t.Fatalf("job %s: %v, ended %s: %s; switches%s\n%s", r.rec.ID, r.err, r.rec.State, r.rec.Reason,
				describeSwitches(r.events), describeRecord(sub, r.rec.ID))
		}
		for _, e := range r.events {
			if e.Action == "stop" && e.Err == "" {
				stops++
			}
		}
		t.Logf("job %s: %d runs, switches %s", r.rec.ID, len(r.rec.Runs), describeSwitches(r.events))
	}
	if stops == 0 {
		t.Fatal("no job was swapped out: the test measured nothing")
	}
	for k, id := range ids {
		if got := finalHeatSum(t, ln.Nodes[0], id); got != ref[order[k]] {
			t.Fatalf("job %s: checksum %s, the solo run's is %s", id, got, ref[order[k]])
		}
	}
}

func describeSwitches(ev []submitter.SwapStep) string {
	s := ""
	for i, e := range ev {
		if i > 0 && e.Err != "" && e.Err == ev[i-1].Err {
			continue // the same refusal again
		}
		s += fmt.Sprintf(" %s@%s", e.Action, e.At.Format("05.0"))
		if e.Err != "" {
			s += "(" + e.Err + ")"
		}
	}
	return s
}

// finalHeatSum reads the checksum heat printed at the end of job id's last run.
func finalHeatSum(t *testing.T, nd *node.Node, id job.ID) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var sums []string
	err := nd.Submitter().Watch(ctx, id, 0, func(u job.Update) error {
		if u.Kind == "output" {
			if m := heatOK.FindStringSubmatch(u.Line); m != nil {
				sums = append(sums, m[1])
			}
		}
		return nil
	})
	if err != nil || len(sums) != 1 {
		t.Fatalf("job %s: %v, heat OK lines %v, want one", id, err, sums)
	}
	return sums[0]
}

// describeRecord is the history of job id, for a failure message.
func describeRecord(sub *submitter.Submitter, id job.ID) string {
	rec, err := sub.Get(id)
	if err != nil {
		return err.Error()
	}
	out := ""
	for _, e := range rec.History {
		out += fmt.Sprintf("  %s %s %s\n", e.At.Format("04:05.000"), e.State, e.Reason)
	}
	return out
}
