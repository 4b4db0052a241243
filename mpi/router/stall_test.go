package router_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/mpi"
	"github.com/zorilla-p2p/zorilla/mpi/internal/mpitest"
	"github.com/zorilla-p2p/zorilla/mpi/router"
)

// stallChildEnv makes TestStalledAgentsChild run: TestAgentsStalled starts
// this test binary again with it set.
const stallChildEnv = "ZORILLA_ROUTER_STALL_CHILD"

// TestAgentsStalled: the process running two agents and their job stops
// (SIGSTOP) for three heartbeat timeouts, as a whole machine under swap
// I/O did for 11-24 s in the out-of-core figure, then continues. Every
// timer of both agents fires late at once, yet nobody was silent while
// the agents ran: no agent may be counted lost, and the job ends well.
func TestAgentsStalled(t *testing.T) {
	cfg := mpitest.FastConfig()
	cmd := exec.Command(os.Args[0], "-test.run=^TestStalledAgentsChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), stallChildEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	var log bytes.Buffer
	go func() {
		sc := bufio.NewScanner(out)
		ready := false
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			if !ready && sc.Text() == "stall-child ready" {
				ready = true
				stall(t, cmd.Process, 3*cfg.HeartbeatTimeout)
			}
		}
		exited <- cmd.Wait()
	}()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("child: %v\n%s%s", err, log.String(), stderr.String())
		}
	case <-time.After(40 * time.Second):
		_ = cmd.Process.Signal(syscall.SIGQUIT) // its goroutines, on stderr
		<-exited
		t.Fatalf("child still running after 60s\n%s%s", log.String(), stderr.String())
	}
	if !strings.Contains(log.String(), "stall-child stalled for") {
		t.Fatalf("the child never saw its stall\n%s", log.String())
	}
}

// stall stops process p for d, then continues it.
func stall(t *testing.T, p *os.Process, d time.Duration) {
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		t.Errorf("SIGSTOP: %v", err)
		return
	}
	time.Sleep(d) // the stall itself: what is measured is how the agents come out of it
	if err := p.Signal(syscall.SIGCONT); err != nil {
		t.Errorf("SIGCONT: %v", err)
	}
}

// TestStalledAgentsChild is the stalled process of TestAgentsStalled: two
// agents and a job of two ranks that exchange a Bcast every 20 ms. Once
// rank 0 sees a gap longer than the heartbeat timeout between two rounds
// (the stall), the job runs three timeouts more, then ends; no agent may
// have been counted lost.
func TestStalledAgentsChild(t *testing.T) {
	if os.Getenv(stallChildEnv) == "" {
		t.Skip("run by TestAgentsStalled")
	}
	cfg := mpitest.FastConfig()
	c := newCluster(t, 2, cfg)
	j, err := c.AddJob(2, mpitest.RoundRobin(2))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Remove()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	errs := j.Run(ctx, func(cm *mpi.Comm) error { return stallRounds(cm, cfg) })
	noErrors(t, errs)
	for a, rj := range j.Jobs {
		if err := rj.Err(); err != nil {
			t.Errorf("agent %d: job failed: %v", a, err)
		}
		for drained := false; !drained; {
			select {
			case ev, ok := <-rj.Events():
				drained = !ok
				if ok && ev.Kind == router.EventPeerLost {
					t.Errorf("agent %d counted %s lost: %v", a, ev.Peer.ShortString(), ev.Err)
				}
			default:
				drained = true
			}
		}
	}
}

// stallRounds runs rounds of a Bcast from rank 0 of whether to go on, until
// three heartbeat timeouts after rank 0 saw the stall.
func stallRounds(cm *mpi.Comm, cfg router.Config) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var stalled time.Time
	last := time.Now()
	for round := 0; ; round++ {
		on := []byte{1}
		if cm.Rank() == 0 {
			<-tick.C // pacing: a round every 20 ms, not a busy loop
			now := time.Now()
			if gap := now.Sub(last); gap > cfg.HeartbeatTimeout && stalled.IsZero() {
				stalled = now
				fmt.Printf("stall-child stalled for %v\n", gap.Round(time.Millisecond))
			}
			last = now
			if !stalled.IsZero() && now.Sub(stalled) > 3*cfg.HeartbeatTimeout {
				on[0] = 0
			}
			if round == 10 {
				fmt.Println("stall-child ready")
			}
			if round > 10000 {
				return errors.New("no stall came in 10000 rounds")
			}
		}
		if err := mpi.Bcast(cm, on, 0); err != nil {
			return err
		}
		if on[0] == 0 {
			return nil
		}
	}
}
