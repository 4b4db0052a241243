package router_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/mpi"
	"github.com/zorilla-p2p/zorilla/mpi/internal/mpitest"
	"github.com/zorilla-p2p/zorilla/mpi/router"
)

// startCopies starts one process per copy of every rank of j (in the order
// of j.Opts).
func startCopies(t *testing.T, bin string, j *mpitest.Job, args ...string) []*rankProc {
	t.Helper()
	procs := make([]*rankProc, len(j.Opts))
	for i, o := range j.Opts {
		p := &rankProc{cmd: exec.Command(bin, args...)}
		p.cmd.Env = append(os.Environ(), envOf(o)...)
		p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.cmd.Process.Kill(); _ = p.cmd.Wait() })
		procs[i] = p
	}
	return procs
}

// TestCopyKilled: one copy's process of a replicated examples/stencil job
// is killed (SIGKILL) at a seeded moment; its rank's other copy carries on,
// and every other process ends well with the result verified.
func TestCopyKilled(t *testing.T) {
	bin, err := build("stencil")
	if err != nil {
		t.Fatal(err)
	}
	for trial := range failoverTrials(t) {
		seed := uint64(trial + 1)
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 2))
			c := newCluster(t, 4, mpitest.FastConfig())
			j, err := c.AddReplicatedJob(4, 2, failoverPlace)
			if err != nil {
				t.Fatal(err)
			}
			defer j.Remove()
			procs := startCopies(t, bin, j, "-iters", "60", "-delay", "10ms", "-block", "100000")
			if err := j.Release(ctxFor(t, 20*time.Second)); err != nil {
				t.Fatal(err)
			}
			victim := rng.IntN(len(procs))
			time.Sleep(time.Duration(50+rng.IntN(500)) * time.Millisecond) // a seeded moment mid-run
			if err := procs[victim].cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			verified := 0
			for i, p := range procs {
				err := p.cmd.Wait()
				if i == victim {
					continue
				}
				if err != nil {
					t.Errorf("rank %d copy %d: %v\n%s", j.Opts[i].Rank, j.Opts[i].Replica, err, p.stderr.String())
				}
				if strings.Contains(p.stdout.String(), "verified") {
					verified++
				}
			}
			if verified == 0 {
				t.Error("no copy of rank 0 printed a verified result")
			}
		})
	}
}

// TestReplicationFigures measures, in interleaved rounds on the same four
// agents, what replication costs: wall time of examples/is and examples/pi
// with r = 1, r = 2 (lead-only) and r = 2 with every copy sending, and the
// MSG frames and bytes the agents put on their links. It runs by hand:
// ZORILLA_REPLICATION_ROUNDS=5 go test -run TestReplicationFigures -v ./mpi/router
func TestReplicationFigures(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("ZORILLA_REPLICATION_ROUNDS"))
	if rounds < 1 {
		t.Skip("set ZORILLA_REPLICATION_ROUNDS to measure")
	}
	type run struct{ prog, mode string }
	progs := map[string][]string{"is": {"A"}, "pi": {"200000000"}}
	modes := []string{"r=1", "r=2", "r=2 every copy sends"}
	wall := map[run][]time.Duration{}
	traffic := map[run]router.Traffic{}
	for round := range rounds {
		for _, prog := range []string{"is", "pi"} {
			bin, err := build(prog)
			if err != nil {
				t.Fatal(err)
			}
			for _, mode := range modes {
				took, sent := replicationRun(t, bin, mode, progs[prog])
				k := run{prog, mode}
				wall[k] = append(wall[k], took)
				if round == 0 {
					traffic[k] = sent
				}
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n| program | mode | median wall time | vs r=1 | MSG frames on links | MSG bytes on links |\n| --- | --- | --- | --- | --- | --- |\n")
	for _, prog := range []string{"is", "pi"} {
		base := median(wall[run{prog, "r=1"}])
		for _, mode := range modes {
			k := run{prog, mode}
			m := median(wall[k])
			fmt.Fprintf(&b, "| %s %s | %s | %v | %.2fx | %d | %d |\n", prog, progs[prog][0], mode, m.Round(time.Millisecond),
				float64(m)/float64(base), traffic[k].Frames, traffic[k].Bytes)
		}
	}
	t.Log(b.String())
}

// replicationRun runs one program on 4 ranks over 4 agents in the given
// mode and returns its wall time and the agents' link traffic.
func replicationRun(t *testing.T, bin, mode string, args []string) (time.Duration, router.Traffic) {
	cfg := router.DefaultConfig()
	cfg.EveryCopySends = strings.Contains(mode, "every")
	c := newCluster(t, 4, cfg)
	replicas := 1
	if strings.HasPrefix(mode, "r=2") {
		replicas = 2
	}
	j, err := c.AddReplicatedJob(4, replicas, failoverPlace)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Remove()
	start := time.Now()
	procs := startCopies(t, bin, j, args...)
	if err := j.Release(ctxFor(t, 5*time.Minute)); err != nil {
		t.Fatal(err)
	}
	for i, p := range procs {
		if err := p.cmd.Wait(); err != nil {
			t.Fatalf("%s copy %d: %v\n%s", mode, i, err, p.stderr.String())
		}
	}
	took := time.Since(start)
	var sent router.Traffic
	for _, r := range c.Routers {
		s := r.Sent()
		sent.Frames += s.Frames
		sent.Bytes += s.Bytes
	}
	return took, sent
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(a, b int) bool { return s[a] < s[b] })
	return s[len(s)/2]
}

// TestFailoverFigures measures, over seeded trials with the default
// heartbeats (1 s, lost after 5 s of silence), how long the agents of a
// replicated job take to count a killed agent lost, and how long the job's
// surviving copies take to make progress again (to finish the iteration
// the kill interrupted). It runs by hand:
// ZORILLA_FAILOVER_FIGURES=10 go test -run TestFailoverFigures -v ./mpi/router
func TestFailoverFigures(t *testing.T) {
	trials, _ := strconv.Atoi(os.Getenv("ZORILLA_FAILOVER_FIGURES"))
	if trials < 1 {
		t.Skip("set ZORILLA_FAILOVER_FIGURES to measure")
	}
	var detect, resume []time.Duration
	for trial := range trials {
		d, r := failoverTimes(t, uint64(trial+1))
		detect, resume = append(detect, d), append(resume, r)
	}
	t.Logf("\n| trials | detection (median, min-max) | progress again (median, min-max) |\n| --- | --- | --- |\n| %d | %v (%v-%v) | %v (%v-%v) |",
		trials, median(detect).Round(time.Millisecond), minOf(detect).Round(time.Millisecond), maxOf(detect).Round(time.Millisecond),
		median(resume).Round(time.Millisecond), minOf(resume).Round(time.Millisecond), maxOf(resume).Round(time.Millisecond))
}

// failoverTimes runs one trial: the agent of rank 1's lead is killed at a
// seeded iteration; it returns the time until a surviving agent counted it
// lost, and until the survivors finished the interrupted iteration.
func failoverTimes(t *testing.T, seed uint64) (detect, resume time.Duration) {
	rng := rand.New(rand.NewPCG(seed, 3))
	c := newCluster(t, 4, router.DefaultConfig())
	j, err := c.AddReplicatedJob(4, 2, failoverPlace)
	if err != nil {
		t.Fatal(err)
	}
	const victim = 1
	at := 3 + rng.IntN(10)
	var mu sync.Mutex
	var killed time.Time
	finished := map[int]time.Time{} // iteration -> when a survivor finished it
	hook := func(cm *mpi.Comm, it int) {
		a := failoverPlace(cm.Rank(), cm.Session().Replica())
		mu.Lock()
		defer mu.Unlock()
		if a != victim && it > 0 && finished[it-1].IsZero() {
			finished[it-1] = time.Now()
		}
		if a == victim && it == at && killed.IsZero() {
			killed = time.Now()
			_ = c.Hosts[victim].Close()
		}
	}
	lost := make(chan time.Time, 4)
	for a, rj := range j.Jobs {
		if a == victim {
			continue
		}
		go func() {
			for ev := range rj.Events() {
				if ev.Kind == router.EventPeerLost {
					lost <- time.Now()
				}
			}
		}()
	}
	errs := j.Run(ctxFor(t, time.Minute), checkedProgram(at+5, 64<<10, hook))
	for i, o := range j.Opts {
		if failoverPlace(o.Rank, o.Replica) != victim && errs[i] != nil {
			t.Fatalf("rank %d copy %d: %v", o.Rank, o.Replica, errs[i])
		}
	}
	first := <-lost
	mu.Lock()
	defer mu.Unlock()
	return first.Sub(killed), finished[at].Sub(killed)
}

func minOf(d []time.Duration) time.Duration { return slices.Min(d) }
func maxOf(d []time.Duration) time.Duration { return slices.Max(d) }

// TestNoFalseFailures runs examples/is class B with two copies of each of 4
// ranks on 4 agents (the agents' default heartbeats) while busy processes
// keep every core loaded, nothing injected, ZORILLA_LOAD_RUNS times: every
// run must complete. It runs by hand (each run takes tens of seconds):
// ZORILLA_LOAD_RUNS=20 go test -run TestNoFalseFailures -v -timeout 60m ./mpi/router
func TestNoFalseFailures(t *testing.T) {
	runs, _ := strconv.Atoi(os.Getenv("ZORILLA_LOAD_RUNS"))
	if runs < 1 {
		t.Skip("set ZORILLA_LOAD_RUNS to run")
	}
	bin, err := build("is")
	if err != nil {
		t.Fatal(err)
	}
	for range 2 * runtime.NumCPU() { // twice as many spinning processes as cores
		busy := exec.Command("sh", "-c", "while :; do :; done")
		if err := busy.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = busy.Process.Kill(); _ = busy.Wait() })
	}
	for run := range runs {
		took, _ := replicationRun(t, bin, "r=2", []string{"B"})
		t.Logf("run %d: is B, r=2, under load: done in %v", run+1, took.Round(time.Millisecond))
	}
}
