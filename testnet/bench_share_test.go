package testnet

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/node"
)

// BenchmarkPreemptToRunning times how long a priority-5 job of 4 ranks
// (heat, 6 steps) takes from submission to running on 4 pool agents
// (J=1, one core each), in interleaved rounds: on idle hosts (the
// reference), on hosts held by a job without a checkpoint (frozen in
// place), and on hosts held by a heat job that checkpoints every 300 ms
// (swapped out by checkpoint). It also reports how much longer the
// swapped-out job took end to end than a solo run.
//
//	go test ./testnet -run '^$' -bench BenchmarkPreemptToRunning -benchtime 5x
func BenchmarkPreemptToRunning(b *testing.B) {
	ln := shareNet(b, func(cfg *node.Config) { cfg.MaxJobs, cfg.MaxPriority = 1, 10 })
	heat := buildExample(b, ln.Nodes[0], "heat")
	dir := b.TempDir()
	spread := func(d job.Description) job.Description {
		d.Strategy, d.Require.Labels, d.Deadline = job.Spread, []string{poolLabel}, 2*time.Minute
		return d
	}
	high := spread(job.NewDescription("heat", []string{"6", "50", "3000"}, 4))
	high.Priority = 5
	lowHeat := spread(job.NewDescription("heat", []string{"40", "50", "3000"}, 4))
	lowHeat.CheckpointEvery = 300 * time.Millisecond
	toRunning := func(w *watcher) time.Duration {
		rec := w.wait(b)
		if rec.State != job.Done {
			b.Fatalf("job ended %s: %s", rec.State, rec.Reason)
		}
		return firstEntered(rec)[job.Running].Sub(rec.Created)
	}
	var idle, frozen, swapped, solo, preempted []time.Duration
	for i := range b.N {
		idle = append(idle, toRunning(submitJob(b, ln.Nodes[0], high, heat)))

		gate := filepath.Join(dir, "gate"+strconv.Itoa(i))
		script := uploadScript(b, ln.Nodes[0], "while [ ! -e "+gate+" ]; do sleep 0.05; done")
		low := submitJob(b, ln.Nodes[0], spread(job.NewDescription("prog.sh", nil, 4)), script)
		low.awaitState(b, job.Running)
		frozen = append(frozen, toRunning(submitJob(b, ln.Nodes[0], high, heat)))
		if err := os.WriteFile(gate, nil, 0o644); err != nil {
			b.Fatal(err)
		}
		low.wait(b)

		ref := submitJob(b, ln.Nodes[0], lowHeat, heat)
		refRec := ref.wait(b)
		solo = append(solo, refRec.Updated.Sub(refRec.Created))
		w := submitJob(b, ln.Nodes[0], lowHeat, heat)
		ln.awaitCheckpoint(b, w, 1)
		swapped = append(swapped, toRunning(submitJob(b, ln.Nodes[0], high, heat)))
		w.wait(b)
		rec := watchJob(ln.Nodes[0], w.id).wait(b)
		if rec.State != job.Done {
			b.Fatalf("swapped-out job ended %s: %s", rec.State, rec.Reason)
		}
		preempted = append(preempted, rec.Updated.Sub(rec.Created))
	}
	b.ReportMetric(medianMS(idle), "ms-idle")
	b.ReportMetric(medianMS(frozen), "ms-freeze")
	b.ReportMetric(medianMS(swapped), "ms-swap")
	b.ReportMetric(medianMS(solo), "ms-low-solo")
	b.ReportMetric(medianMS(preempted), "ms-low-swapped")
	b.Logf("to running: idle %v, freeze %v, swap %v; low job end to end: solo %v, swapped %v", idle, frozen, swapped, solo, preempted)
}
