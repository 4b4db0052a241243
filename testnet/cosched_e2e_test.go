package testnet

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/node"
	"github.com/zorilla-p2p/zorilla/worker"
)

// gatedJob is a job of 4 ranks, one per pool agent, that declares mem
// per process and ends when the file gate appears (after the body).
func gatedJob(t *testing.T, ln *launchNet, gate, body string, mem int64) (job.Description, proto.FileRef) {
	prog := uploadScript(t, ln.Nodes[0], body+"\nwhile [ ! -e "+gate+" ]; do sleep 0.05; done")
	d := job.NewDescription("prog.sh", nil, 4)
	d.Strategy, d.Require.Labels, d.MemPerProc = job.Spread, []string{poolLabel}, mem
	d.Deadline = time.Minute
	return d, prog
}

func openGate(t *testing.T, gate string) {
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Co-scheduling within memory on 4 agents lending 1G and 4 cores each,
// J=3, P=1 (a job takes one process per agent): two jobs
// of 400M per process run together on the same hosts; a third, which J
// and the cores would let in, waits until one ends, for memory; three of
// 300M run together. Then a
// job that declares nothing but uses 100M per process keeps out one that
// declares 950M: the worker charges what a job uses, measured.
func TestCoScheduleWithinMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("5 agents, real processes")
	}
	const M = int64(1) << 20
	ln := shareNet(t, func(cfg *node.Config) {
		cfg.MaxJobs, cfg.Cores, cfg.MaxProcs, cfg.Memory = 3, 4, 1, 1024*M
		cfg.Services.Worker.MemorySample = 200 * time.Millisecond
	})
	pool := []int{1, 2, 3, 4}
	dir := t.TempDir()
	gates := map[string]string{}
	for _, g := range []string{"a", "b", "c", "m", "y"} {
		gates[g] = filepath.Join(dir, g)
	}
	da, pa := gatedJob(t, ln, gates["a"], "", 400*M)
	a := submitJob(t, ln.Nodes[0], da, pa)
	db, pb := gatedJob(t, ln, gates["b"], "", 400*M)
	b := submitJob(t, ln.Nodes[0], db, pb)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("a: %s\nb: %s\nleases:\n%s", a.describe(), b.describe(), describeLeases(leasesOf(ln.Net)))
		}
	})
	a.awaitState(t, job.Running)
	b.awaitState(t, job.Running)
	if !holding(ln.Net, a.id, pool...) || !holding(ln.Net, b.id, pool...) {
		t.Fatalf("two jobs that fit are not on the same 4 hosts:\n%s", describeLeases(leasesOf(ln.Net)))
	}
	dc, pc := gatedJob(t, ln, gates["c"], "", 400*M)
	c := submitJob(t, ln.Nodes[0], dc, pc)
	c.awaitState(t, job.Reserving)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Every pool agent, asked now, refuses the third job for memory only
	// (its slots, cores and J would let it in), and none holds a lease
	// for it over a window of its flood's first radii.
	need := dc.Need(c.id)
	for _, i := range pool {
		d := worker.Decide(ln.Nodes[i].Leases().Policy(), ln.Nodes[i].Leases().Usage(), ln.Nodes[0].ID(), need)
		if d.Accept || !d.Full || d.Code != proto.DeclineMemory {
			t.Fatalf("agent %d would decide %+v on the third job, want a wait for memory", i, d)
		}
	}
	window, stop := context.WithTimeout(ctx, 2*time.Second)
	defer stop()
	if ln.Await(window, "a lease for the third job", func() bool {
		for _, i := range pool {
			if holding(ln.Net, c.id, i) {
				return true
			}
		}
		return false
	}) == nil {
		t.Fatalf("a third job admitted beyond memory:\n%s", describeLeases(leasesOf(ln.Net)))
	}
	openGate(t, gates["a"])
	aEnd := a.wait(t)
	c.awaitState(t, job.Running)
	if cRun := firstEntered(c.end)[job.Running]; !cRun.IsZero() && cRun.Before(aEnd.Updated) {
		t.Fatalf("the third job ran at %v, before the first ended at %v", cRun, aEnd.Updated)
	}
	openGate(t, gates["b"])
	openGate(t, gates["c"])
	for _, w := range []*watcher{a, b, c} {
		if rec := w.wait(t); rec.State != job.Done {
			t.Fatalf("job %s ended %s: %s", w.id, rec.State, rec.Reason)
		}
	}

	// Three jobs of 300M per process fit together (900M of 1G): all three
	// run at once on the same 4 hosts.
	var three []*watcher
	for i := range 3 {
		g := filepath.Join(dir, "three"+strconv.Itoa(i))
		gates["three"+strconv.Itoa(i)] = g
		d3, p3 := gatedJob(t, ln, g, "", 300*M)
		three = append(three, submitJob(t, ln.Nodes[0], d3, p3))
	}
	for _, w := range three {
		w.awaitState(t, job.Running)
	}
	for _, w := range three {
		if !holding(ln.Net, w.id, pool...) {
			t.Fatalf("three jobs that fit are not on the same 4 hosts:\n%s", describeLeases(leasesOf(ln.Net)))
		}
	}
	for i, w := range three {
		openGate(t, gates["three"+strconv.Itoa(i)])
		if rec := w.wait(t); rec.State != job.Done {
			t.Fatalf("job %s ended %s: %s", w.id, rec.State, rec.Reason)
		}
	}

	// Measured use: 100M held in a shell variable, nothing declared.
	dm, pm := gatedJob(t, ln, gates["m"], "x=$(head -c 100000000 /dev/zero | tr '\\0' a); echo allocated", 0)
	m := submitJob(t, ln.Nodes[0], dm, pm)
	m.awaitState(t, job.Running)
	if err := ln.Await(ctx, "the memory of the undeclared job measured", func() bool {
		for _, i := range pool {
			if ln.Nodes[i].Leases().Usage().Memory < 90*M {
				return false
			}
		}
		return true
	}); err != nil {
		t.Fatal(err)
	}
	dy, py := gatedJob(t, ln, gates["y"], "", 950*M)
	y := submitJob(t, ln.Nodes[0], dy, py)
	y.awaitState(t, job.Reserving)
	for _, i := range pool {
		l := ln.Nodes[i].Leases()
		if d := worker.Decide(l.Policy(), l.Usage(), ln.Nodes[0].ID(), dy.Need(y.id)); d.Accept || d.Code != proto.DeclineMemory {
			t.Fatalf("agent %d (usage %+v) would decide %+v on the 950M job, want a wait for memory", i, l.Usage(), d)
		}
	}
	openGate(t, gates["m"])
	if rec := m.wait(t); rec.State != job.Done {
		t.Fatalf("measured job ended %s: %s", rec.State, rec.Reason)
	}
	y.awaitState(t, job.Running)
	openGate(t, gates["y"])
	if rec := y.wait(t); rec.State != job.Done {
		t.Fatalf("950M job ended %s: %s", rec.State, rec.Reason)
	}
}
