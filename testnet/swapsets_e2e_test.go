package testnet

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/job/submitter"
	"github.com/zorilla-p2p/zorilla/node"
)

// The hybrid technique on sets of jobs: three heat jobs of equal
// priority on the same 4 agents, two of which fit in memory at once
// (450M per process, 1G lent, one process of each per agent): the first
// two are co-scheduled, the third waits for memory, and the agents rotate
// them by checkpoint on swap slices: the third runs before either of the
// others has ended, each is swapped out at least once, and every job ends
// with the result of a run never swapped out.

// setsHeat is heat on 4 ranks, 80 steps of 50 ms (4 s alone), declaring
// mem per process; slice 0 never swaps it for an equal.
func setsHeat(cells string, mem int64, slice time.Duration) job.Description {
	d := turnHeat(cells, slice)
	d.MemPerProc = mem
	return d
}

func TestSwapTurnsRotateThreeJobs(t *testing.T) { rotateThreeJobs(t, false) }

// The same three jobs submitted at once, as the out-of-core row
// "agents' swap" did: the memory they contest goes to the first two by
// the yield rule, so they run together while the third waits, and the
// third then swaps in on its turn, rather than the second and third each
// holding some of the hosts and waiting for the rest, the first running
// alone.
func TestSwapTurnsThreeJobsSubmittedAtOnce(t *testing.T) { rotateThreeJobs(t, true) }

// rotateThreeJobs submits the three jobs, all at once with atOnce, else
// the third once the first two run.
func rotateThreeJobs(t *testing.T, atOnce bool) {
	if testing.Short() {
		t.Skip("5 agents, real processes, checkpoints")
	}
	ln := shareNet(t, func(cfg *node.Config) {
		// J and the cores take three jobs: memory alone keeps the third out.
		cfg.MaxJobs, cfg.Cores, cfg.MaxProcs, cfg.Memory = 3, 3, 1, 1<<30
	})
	prog := buildExample(t, ln.Nodes[0], "heat")
	cells := []string{"3000", "3003", "3006"}
	want := referenceSums(t, ln, prog, cells, func(c string) job.Description { return setsHeat(c, 300<<20, 0) })

	const slice = 1500 * time.Millisecond
	var ws []*watcher
	for i, c := range cells {
		w := submitJob(t, ln.Nodes[0], setsHeat(c, 450<<20, slice), prog)
		if i < 2 && !atOnce {
			w.awaitState(t, job.Running) // co-scheduled: both fit
		}
		ws = append(ws, w)
	}
	third := 2
	if atOnce {
		// Two run together (whichever two: the third's turn may come
		// before this sees them), the other waits.
		third = slices.Index(ws, awaitTwoOfThree(t, ln, ws, 0)[2])
	}
	var ids []job.ID
	for _, w := range ws {
		ids = append(ids, w.id)
	}
	sub := ln.Nodes[0].Submitter()
	recs := awaitAllDone(t, ln, sub, ids, 3*time.Minute)
	checkSwapTurns(t, ln, sub, recs, want)
	if d := doubleSwaps(recs, time.Second); atOnce && len(d) > 0 {
		t.Fatalf("one turn swapped out two jobs where one made room: %v", d)
	}
	// The third job took its turn while the first two still had work to do.
	started := recs[third].Runs[0].Started
	for i, rec := range recs {
		if i != third && (!started.Before(rec.Updated) || len(rec.Runs) < 2) {
			t.Fatalf("job %s ended %s after %d runs, the third started %s: want it swapped out for the third",
				rec.ID, rec.Updated.Format("04:05.000"), len(rec.Runs), started.Format("04:05.000"))
		}
	}
}

// referenceSums runs heat (desc) on each of cells, all at once, none ever
// swapped out (desc declares memory that fits), and returns their
// checksums: the results a swapped job must end with. Heat's pause per
// step (its second argument) changes nothing of the result: the reference
// runs go without it.
func referenceSums(t *testing.T, ln *launchNet, prog proto.FileRef, cells []string, desc func(cells string) job.Description) []string {
	t.Helper()
	var refs []*watcher
	for _, c := range cells {
		d := desc(c)
		d.Args = append([]string{d.Args[0], "0"}, d.Args[2:]...)
		refs = append(refs, submitJob(t, ln.Nodes[0], d, prog))
	}
	var want []string
	for _, w := range refs {
		if rec := w.wait(t); rec.State != job.Done || len(rec.Runs) != 1 {
			t.Fatalf("reference run ended %s after %d runs: %s\n%s", rec.State, len(rec.Runs), rec.Reason, w.describe())
		}
		want = append(want, heatSum(t, w))
	}
	for _, w := range refs {
		ln.awaitCheckpointsGone(t, w.end)
	}
	return want
}

// doubleSwaps lists the jobs swapped out for the same job within within
// of each other: a turn that took out two jobs where one made room.
func doubleSwaps(recs []job.Record, within time.Duration) []string {
	type swap struct {
		at      time.Time
		job, to job.ID
	}
	var all []swap
	for _, rec := range recs {
		for _, s := range rec.Switches {
			if _, rest, ok := strings.Cut(s.Why, "for job "); ok && s.To == job.PhaseSwapped {
				to, _, _ := strings.Cut(rest, " ")
				all = append(all, swap{s.At, rec.ID, job.ID(to)})
			}
		}
	}
	var out []string
	for i, a := range all {
		for _, b := range all[i+1:] {
			if a.to == b.to && a.job != b.job && a.at.Sub(b.at).Abs() < within {
				out = append(out, fmt.Sprintf("%s at %s and %s at %s for %s",
					a.job, a.at.Format("04:05.000"), b.job, b.at.Format("04:05.000"), a.to))
			}
		}
	}
	return out
}

// awaitAllDone waits until every job in ids has ended (a Stopped job is
// swapped out, not ended) and returns their records.
func awaitAllDone(t *testing.T, ln *launchNet, sub *submitter.Submitter, ids []job.ID, limit time.Duration) []job.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	recs := make([]job.Record, len(ids))
	err := ln.Await(ctx, "every job done", func() bool {
		ended := true
		for i, id := range ids {
			rec, err := sub.Get(id)
			if err != nil {
				return false
			}
			recs[i] = rec
			ended = ended && rec.State.Terminal() && rec.State != job.Stopped
		}
		return ended
	})
	if err != nil {
		var b strings.Builder
		for _, id := range ids {
			b.WriteString(describeRecord(sub, id) + "\n")
		}
		t.Fatalf("%v\n%sleases:\n%s", err, b.String(), describeLeases(leasesOf(ln.Net)))
	}
	return recs
}

// Four jobs of which two fit: the agents switch whole sets. The first two
// run together; the last two, waiting for memory, take both their places
// at the same turn, and the sets alternate: a job runs alongside the other
// of its set, hardly ever alongside one of the other set (only while a
// switch is under way). Switched one job at a time, the pairs would mix
// ({A,B}, {C,B}, {C,D}, {A,D}, ...), each mixed pair running together for
// a whole slice.
func TestSwapTurnsRotateSets(t *testing.T) {
	if testing.Short() {
		t.Skip("5 agents, real processes, checkpoints")
	}
	ln := shareNet(t, func(cfg *node.Config) {
		cfg.MaxJobs, cfg.Cores, cfg.MaxProcs, cfg.Memory = 4, 4, 1, 1<<30
	})
	prog := buildExample(t, ln.Nodes[0], "heat")
	cells := []string{"3000", "3003", "3006", "3009"}
	want := referenceSums(t, ln, prog, cells, func(c string) job.Description { return setsHeat(c, 200<<20, 0) })

	const slice = 1500 * time.Millisecond
	var ids []job.ID
	for i, c := range cells {
		w := submitJob(t, ln.Nodes[0], setsHeat(c, 450<<20, slice), prog)
		if i < 2 {
			w.awaitState(t, job.Running) // co-scheduled: both fit
		}
		ids = append(ids, w.id)
	}
	sub := ln.Nodes[0].Submitter()
	recs := awaitAllDone(t, ln, sub, ids, 4*time.Minute)
	checkSwapTurns(t, ln, sub, recs, want)
	same := runningTogether(recs[0], recs[1], time.Now()) + runningTogether(recs[2], recs[3], time.Now())
	var mixed time.Duration
	for _, p := range [][2]int{{0, 2}, {0, 3}, {1, 2}, {1, 3}} {
		mixed += runningTogether(recs[p[0]], recs[p[1]], time.Now())
	}
	t.Logf("running together: the sets' own pairs %v, mixed pairs %v", same.Round(time.Millisecond), mixed.Round(time.Millisecond))
	if mixed*4 > same {
		t.Fatalf("jobs of different sets ran together %v, the sets' own pairs %v: want the sets switched whole", mixed, same)
	}
}

// runningTogether is how long jobs a and b were both running (their
// switches' running phases overlapping) up to now.
func runningTogether(a, b job.Record, now time.Time) time.Duration {
	var sum time.Duration
	for _, x := range runningSpans(a, now) {
		for _, y := range runningSpans(b, now) {
			if lo, hi := maxT(x[0], y[0]), minT(x[1], y[1]); hi.After(lo) {
				sum += hi.Sub(lo)
			}
		}
	}
	return sum
}

// runningSpans are the intervals in which rec's phase was running.
func runningSpans(rec job.Record, now time.Time) [][2]time.Time {
	var out [][2]time.Time
	for i, s := range rec.Switches {
		if s.To != job.PhaseRunning {
			continue
		}
		end := now
		if i+1 < len(rec.Switches) {
			end = rec.Switches[i+1].At
		}
		out = append(out, [2]time.Time{s.At, end})
	}
	return out
}

func maxT(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minT(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
