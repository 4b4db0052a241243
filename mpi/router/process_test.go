package router_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/internal/gobuild"
	"github.com/zorilla-p2p/zorilla/mpi"
	"github.com/zorilla-p2p/zorilla/mpi/internal/mpitest"
	"github.com/zorilla-p2p/zorilla/mpi/router"
)

func TestMain(m *testing.M) {
	code := m.Run()
	gobuild.Clean()
	os.Exit(code)
}

// build builds an example program once per test binary (gobuild).
func build(name string) (string, error) {
	return gobuild.Once("github.com/zorilla-p2p/zorilla/examples/"+name, name)
}

// rankProc is one real rank process.
type rankProc struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
}

func envOf(o mpi.Options) []string {
	return []string{
		mpi.EnvSocket + "=" + o.Socket, mpi.EnvJob + "=" + o.Job, mpi.EnvKey + "=" + o.Key,
		fmt.Sprintf("%s=%d", mpi.EnvRank, o.Rank), fmt.Sprintf("%s=%d", mpi.EnvSize, o.Size),
		fmt.Sprintf("%s=%d", mpi.EnvReplica, o.Replica),
	}
}

// TestRealProcesses: examples/ring, built and run as 5 processes on two
// agents, passes its token and ends cleanly.
func TestRealProcesses(t *testing.T) {
	bin, err := build("ring")
	if err != nil {
		t.Fatal(err)
	}
	c := newCluster(t, 2, mpitest.FastConfig())
	j, err := c.AddJob(5, mpitest.RoundRobin(2))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Remove()
	procs := startCopies(t, bin, j, "50")
	if err := j.Release(ctxFor(t, 20*time.Second)); err != nil {
		t.Fatal(err)
	}
	for r, p := range procs {
		if err := p.cmd.Wait(); err != nil {
			t.Errorf("rank %d: %v\n%s", r, err, p.stderr.String())
		}
	}
	if out := procs[0].stdout.String(); !strings.Contains(out, "5 ranks, 50 laps, token 500,") {
		t.Errorf("rank 0 printed %q", out)
	}
}

// TestKilledProcess: one rank process is killed (SIGKILL) mid-run; every
// other process's blocked call fails promptly naming it, and they all exit.
func TestKilledProcess(t *testing.T) {
	bin, err := build("ring")
	if err != nil {
		t.Fatal(err)
	}
	c := newCluster(t, 2, mpitest.FastConfig())
	j, err := c.AddJob(4, mpitest.RoundRobin(2))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Remove()
	procs := startCopies(t, bin, j, "1000000000") // runs until something stops it
	if err := j.Release(ctxFor(t, 20*time.Second)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := procs[2].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, len(procs))
	for _, p := range procs {
		go func() { done <- p.cmd.Wait() }()
	}
	for range procs {
		select {
		case err := <-done:
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Errorf("a rank process ended with %v, want a failure exit", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("rank processes still running 10s after rank 2 was killed")
		}
	}
	t.Logf("all ranks ended %v after the kill", time.Since(start))
	for r, p := range procs {
		if r != 2 && !strings.Contains(p.stderr.String(), "rank lost (rank 2)") {
			t.Errorf("rank %d stderr %q does not name rank 2", r, p.stderr.String())
		}
	}
}

// TestPingPongProcesses: examples/pingpong runs as two processes on two
// agents and reports every size. ZORILLA_PINGPONG_MAX raises the largest
// size, to measure by hand.
func TestPingPongProcesses(t *testing.T) {
	bin, err := build("pingpong")
	if err != nil {
		t.Fatal(err)
	}
	maxSize := "4096"
	if v := os.Getenv("ZORILLA_PINGPONG_MAX"); v != "" {
		maxSize = v
	}
	c := newCluster(t, 2, router.DefaultConfig())
	j, err := c.AddJob(2, mpitest.RoundRobin(2))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Remove()
	procs := startCopies(t, bin, j, maxSize)
	if err := j.Release(ctxFor(t, 20*time.Second)); err != nil {
		t.Fatal(err)
	}
	for r, p := range procs {
		if err := p.cmd.Wait(); err != nil {
			t.Fatalf("rank %d: %v\n%s", r, err, p.stderr.String())
		}
	}
	out := procs[0].stdout.String()
	t.Logf("\n%s", out)
	if lines := strings.Count(out, "\n"); lines < 2 || !strings.Contains(out, " "+maxSize+" ") {
		t.Fatalf("pingpong printed %q", out)
	}
}
