package testnet

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/internal/gang"
	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/node"
)

// Jobs that share hosts take turns on aligned time slices, all
// the ranks of a job running in the same slices, one job at a time.

// gangSlice is the slice of these tests, and gangEdge the tolerance at
// each of its boundaries: a rank's clock reading that close to a boundary
// may fall on either side (switch latency on a loaded machine, the
// rank's own loop), so it proves nothing about alignment. It is also the
// tolerance on the median switch skew across a job's ranks.
const (
	gangSlice = 500 * time.Millisecond
	gangEdge  = 150 * time.Millisecond
)

// gangTick is what the ranks of these tests (testdata/clock) print: their
// clock, in ns.
var gangTick = regexp.MustCompile(`^t (\d+)$`)

// gangReadings is how many readings a rank prints, 10 ms apart: 5 s of
// running each, which gives the jobs about 10 slices each while they run
// together.
const gangReadings = 500

func TestGangAlignedSlices(t *testing.T) {
	if testing.Short() {
		t.Skip("7 agents, real processes, time slices")
	}
	for _, jobs := range []int{2, 3} {
		t.Run(fmt.Sprintf("%d-jobs", jobs), func(t *testing.T) { testGang(t, jobs) })
	}
}

func testGang(t *testing.T, jobs int) {
	ln := startLaunchNet(t, 7, jobs, func(_ int, cfg *node.Config) {
		cfg.MaxProcs = 1 // one rank of each job per host: every job on the same 4 hosts
		cfg.Services.Worker.Gang = gang.Config{Slice: gangSlice, Columns: jobs}
	})
	prog := uploadProgram(t, ln.Nodes[0], "./testdata/clock")
	var ws []*watcher
	for range jobs {
		d := job.NewDescription(prog.Name, []string{strconv.Itoa(gangReadings)}, 4)
		d.Strategy = job.Spread
		d.Require.Labels = []string{poolLabel}
		w := submitJob(t, ln.Nodes[0], d, prog)
		w.awaitLines(t, gangTick, 4) // committed: the next job's offers see its column taken
		ws = append(ws, w)
	}
	ticks := make([]map[int][]time.Time, jobs) // job -> rank -> clock readings
	for j, w := range ws {
		rec := w.wait(t)
		if rec.State != job.Done {
			t.Fatalf("job %d ended %s: %s\n%s", j, rec.State, rec.Reason, w.describe())
		}
		// Its time frozen by the rotation reached its record (RepSliced),
		// as frozen time, not running time.
		if tu := rec.TimeAt(rec.Updated); tu.Sliced <= 0 || tu.Frozen < tu.Sliced || tu.Running <= 0 {
			t.Fatalf("job %d's time %+v: want time frozen by slices, counted as frozen", j, tu)
		} else {
			t.Logf("job %d: running %v, frozen by slices %v", j, tu.Running.Round(time.Millisecond), tu.Sliced.Round(time.Millisecond))
		}
		ticks[j] = rankTicks(t, w.updates())
		for rank, ts := range ticks[j] {
			t.Logf("job %d rank %d: %d readings %s .. %s", j, rank, len(ts), ts[0].Format("05.000"), ts[len(ts)-1].Format("05.000"))
		}
		if len(ticks[j]) != 4 {
			t.Fatalf("job %d: clock readings from %d ranks, want 4", j, len(ticks[j]))
		}
	}
	r := gangAlignment(gang.Config{Slice: gangSlice, Columns: jobs}, ticks)
	t.Logf("%d jobs, %v slices: %d shared slices; each held by one job: %d; ranks of the job all in it: %d; "+
		"thaw skew across ranks: max %v, median %v",
		jobs, gangSlice, r.shared, r.exclusive, r.aligned, r.maxSkew, r.medianSkew)
	if r.shared < jobs {
		t.Fatalf("only %d slices while the jobs ran together: the test measured nothing", r.shared)
	}
	// The machine these tests run on is shared and loaded (2 cores, load
	// 15-20): a rank or the agent's rotation can miss a whole slice's
	// CPU. So 1 slice in 10 may miss; without the rotation (co-scheduled)
	// no slice would be held by one job.
	if ok := min(r.exclusive, r.aligned); ok*10 < r.shared*9 {
		t.Fatalf("of %d shared slices, %d held by one job, %d with all its ranks: %v", r.shared, r.exclusive, r.aligned, r.bad)
	}
	if r.medianSkew > gangEdge {
		t.Fatalf("ranks of a job resumed a median %v apart, tolerance %v", r.medianSkew, gangEdge)
	}
	if len(r.bad) > 0 {
		t.Logf("slices missed under load: %v", r.bad)
	}
}

// rankTicks reads the clock readings of each rank from a job's output.
func rankTicks(t *testing.T, ups []job.Update) map[int][]time.Time {
	t.Helper()
	out := map[int][]time.Time{}
	for _, l := range linesMatching(ups, gangTick) {
		ns, err := strconv.ParseInt(l.sub[0], 10, 64)
		if err != nil {
			t.Fatalf("bad clock line %q", l.u.Line)
		}
		out[l.u.Rank] = append(out[l.u.Rank], time.Unix(0, ns))
	}
	return out
}

// alignment is what gangAlignment measured.
type alignment struct {
	shared     int // slices while every job ran (all its ranks between their first and last readings)
	exclusive  int // of those, slices whose core (gangEdge from each end) held readings of one job only
	aligned    int // of those, slices where every rank of that job has a reading
	maxSkew    time.Duration
	medianSkew time.Duration
	bad        []string
}

// gangAlignment checks, slice by slice of the time every job was running,
// that one job only ran in the slice's core, and that all of its ranks did.
// It also measures, at each slice where a job resumed, how far apart its
// ranks' first readings were (the switch skew seen by the ranks, which
// includes their 10 ms sampling).
func gangAlignment(c gang.Config, ticks []map[int][]time.Time) alignment {
	var from, to time.Time
	for _, ranks := range ticks {
		for _, ts := range ranks {
			if from.IsZero() || ts[0].After(from) {
				from = ts[0]
			}
			if to.IsZero() || ts[len(ts)-1].Before(to) {
				to = ts[len(ts)-1]
			}
		}
	}
	var a alignment
	var skews []time.Duration
	for k := c.Slot(from) + 1; k < c.Slot(to); k++ {
		start := time.Unix(0, k*int64(c.Slice))
		core0, core1 := start.Add(gangEdge), start.Add(c.Slice-gangEdge)
		a.shared++
		var holders []int
		for j, ranks := range ticks {
			for _, ts := range ranks {
				if slices.ContainsFunc(ts, func(x time.Time) bool { return !x.Before(core0) && x.Before(core1) }) {
					holders = append(holders, j)
					break
				}
			}
		}
		if len(holders) != 1 {
			a.bad = append(a.bad, fmt.Sprintf("slice %d: jobs %v ran in its core", k, holders))
			continue
		}
		a.exclusive++
		var firsts []time.Time
		for _, ts := range ticks[holders[0]] {
			i := slices.IndexFunc(ts, func(x time.Time) bool { return !x.Before(start) && x.Before(start.Add(c.Slice)) })
			if i >= 0 {
				firsts = append(firsts, ts[i])
			}
		}
		if len(firsts) != len(ticks[holders[0]]) {
			a.bad = append(a.bad, fmt.Sprintf("slice %d: %d of job %d's ranks ran", k, len(firsts), holders[0]))
			continue
		}
		a.aligned++
		lo, hi := slices.MinFunc(firsts, time.Time.Compare), slices.MaxFunc(firsts, time.Time.Compare)
		skews = append(skews, hi.Sub(lo))
	}
	if len(skews) > 0 {
		slices.Sort(skews)
		a.maxSkew, a.medianSkew = skews[len(skews)-1], skews[len(skews)/2]
	}
	return a
}
