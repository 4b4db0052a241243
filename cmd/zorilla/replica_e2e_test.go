package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/node"

	"github.com/zorilla-p2p/zorilla/testnet/localnet"
)

// TestReplicatedJobSurvivesKills: on five agent processes, a job of 4
// ranks with 2 copies each (examples/stencil, which checks every message
// it receives) loses one copy's process (SIGKILL), then one whole agent
// (SIGKILL). The submitter says so once per lost copy, the job ends done
// with the verified result, status lists both lost copies, and no process
// of the job is left.
func TestReplicatedJobSurvivesKills(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	n, _, stencil := stencilNet(t, ctx)
	out, errw, code := submitStencil(t, n, stencil, "-n", "4", "-r", "2")
	// Kill a copy of rank 1, then an agent (not the submitter's) that runs
	// no copy of rank 1: every rank keeps a copy.
	copies := stencilCopies(t, n)
	killed := copies[0]
	for _, c := range copies {
		if c.rank == 1 {
			killed = c
		}
	}
	if err := syscall.Kill(killed.pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the lost copy's notice", func() bool { return strings.Count(errw.String(), " lost on ") == 1 })
	victim := -1
	for a := len(n.Agents()) - 1; a > 0 && victim < 0; a-- {
		victim = a
		for _, c := range copies {
			if c.agent == a && c.rank == killed.rank {
				victim = -1
			}
		}
	}
	if err := n.Agents()[victim].Process().Kill(); err != nil {
		t.Fatal(err)
	}
	awaitVerified(t, ctx, out, errw, code)
	if lost := strings.Count(errw.String(), " lost on "); lost < 2 {
		t.Errorf("%d lost-copy notices, want one per copy lost (at least 2):\n%s", lost, errw.String())
	}
	m := regexp.MustCompile(`job (\S+) done`).FindStringSubmatch(errw.String())
	if m == nil {
		t.Fatalf("no job ID in %q", errw.String())
	}
	st := zorilla("status", "--data-dir", n.Agents()[0].Dir, m[1])
	if !strings.Contains(st.stdout, "lost copies: ") || !strings.Contains(st.stdout, "killed by signal SIGKILL") {
		t.Errorf("status does not list the lost copies:\n%v", st)
	}
	waitFor(t, 30*time.Second, "no stencil process left", func() bool { return len(stencilProcs(n)) == 0 })
}

// stencilCopy is one running copy of the stencil job.
type stencilCopy struct {
	pid, agent, rank, replica int
}

// stencilCopies finds the running copies of the stencil job on the agents
// of n: which agent runs each (from the job folder it runs in) and which
// rank and copy it is (from its environment).
func stencilCopies(t *testing.T, n *localnet.Net) []stencilCopy {
	t.Helper()
	var out []stencilCopy
	for _, pid := range stencilProcs(n) {
		c := stencilCopy{pid: pid, agent: -1}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		for a, ag := range n.Agents() {
			if bytes.HasPrefix(cmdline, []byte(agentJobsDir(ag)+"/")) {
				c.agent = a
			}
		}
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil || c.agent < 0 {
			t.Fatalf("copy %d: agent %d, environment: %v", pid, c.agent, err)
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			k, v, _ := strings.Cut(string(kv), "=")
			switch k {
			case "ZORILLA_RANK":
				c.rank, _ = strconv.Atoi(v)
			case "ZORILLA_REPLICA":
				c.replica, _ = strconv.Atoi(v)
			}
		}
		out = append(out, c)
	}
	return out
}

// stencilProcs lists the pids of the running copies of a program named
// stencil that the agents of n staged and started.
func stencilProcs(n *localnet.Net) []int {
	var pids []int
	for f, cmdline := range processes() {
		argv0, _, _ := bytes.Cut(cmdline, []byte{0})
		ours := slices.ContainsFunc(n.Agents(), func(a *localnet.Agent) bool {
			return bytes.HasPrefix(argv0, []byte(agentJobsDir(a)+"/"))
		})
		if ours && filepath.Base(string(argv0)) == "stencil" {
			pid, err := strconv.Atoi(strings.Split(f, "/")[2])
			if err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// TestUnreplicatedJobRestartsAfterKill: on five agent processes, a job of
// 4 ranks with one copy each loses an agent (SIGKILL) while it computes.
// With --retries 0 it fails at once naming that host; with the default
// retries it starts again on the surviving agents and ends done with the
// verified result, and status lists both attempts.
func TestUnreplicatedJobRestartsAfterKill(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	n, _, stencil := stencilNet(t, ctx)
	// submitAndKill runs the job and kills the agent (not the submitter's)
	// of some rank once every rank computes; it returns the exit status,
	// the output and the agent killed.
	submitAndKill := func(retries string) (int, string, string, string) {
		out, errw, code := submitStencil(t, n, stencil, "-n", "4", "-a", "spread", "--retries", retries)
		victim := -1
		for _, c := range stencilCopies(t, n) {
			if c.agent > 0 {
				victim = c.agent
			}
		}
		if victim < 0 {
			t.Fatalf("every rank runs on the submitter's agent")
		}
		if err := n.Agents()[victim].Process().Kill(); err != nil {
			t.Fatal(err)
		}
		select {
		case c := <-code:
			return c, out.String(), errw.String(), n.Agents()[victim].ID.ID.String()
		case <-ctx.Done():
			t.Fatalf("job still running:\n%s\n%s", out.String(), errw.String())
		}
		return 0, "", "", ""
	}

	c, out, errs, victim := submitAndKill("0")
	named := fmt.Sprintf("host %s…%s lost while running", victim[:4], victim[len(victim)-4:])
	if c == 0 || !strings.Contains(errs, named) || !strings.Contains(errs, "retries 0") || strings.Contains(errs, "starting the job again") {
		t.Fatalf("--retries 0: exit %d, want a failure naming %q\n--- stdout\n%s--- stderr\n%s", c, named, out, errs)
	}

	c, out, errs, victim = submitAndKill("2")
	named = fmt.Sprintf("host %s…%s lost while running", victim[:4], victim[len(victim)-4:])
	if c != 0 || !strings.Contains(out, "verified") || !strings.Contains(errs, named+" (agent unreachable); starting the job again") {
		t.Fatalf("exit %d, want done after one restart naming %q\n--- stdout\n%s--- stderr\n%s", c, named, out, errs)
	}
	m := regexp.MustCompile(`job (\S+) done`).FindStringSubmatch(errs)
	if m == nil {
		t.Fatalf("no job ID in %q", errs)
	}
	st := zorilla("status", "--data-dir", n.Agents()[0].Dir, m[1])
	if !strings.Contains(st.stdout, "attempts: 2") || !strings.Contains(st.stdout, "lost while running") {
		t.Errorf("status does not list both attempts:\n%v", st)
	}
	waitFor(t, 30*time.Second, "no stencil process left", func() bool { return len(stencilProcs(n)) == 0 })
}

// TestDrainHandsJobsOver: SIGTERM to an agent that runs copies of a
// replicated job (4 ranks, 2 copies, five agent processes): the agent
// tells the submitter and the job's other agents that it leaves, the other
// copies carry on, the submitter says so once per copy ("agent stopping"),
// the agent exits cleanly within its drain timeout, and the job ends done
// with the verified result.
func TestDrainHandsJobsOver(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	n, _, stencil := stencilNet(t, ctx)
	out, errw, code := submitStencil(t, n, stencil, "-n", "4", "-r", "2")
	victim, copies := -1, 0
	for _, c := range stencilCopies(t, n) {
		if c.agent > 0 && (victim < 0 || c.agent == victim) {
			victim = c.agent
			copies++
		}
	}
	if victim < 0 {
		t.Fatal("no copy runs outside the submitter's agent")
	}
	if err := n.Agents()[victim].Process().Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-n.Agents()[victim].Exited():
		if n.Agents()[victim].Err() != nil {
			t.Errorf("drained agent exited with %v; its log:\n%s", n.Agents()[victim].Err(), localnet.LogTail(n.Agents()[victim].LogPath))
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("agent still running 30 s after SIGTERM; its log:\n%s", localnet.LogTail(n.Agents()[victim].LogPath))
	}
	awaitVerified(t, ctx, out, errw, code)
	if got := strings.Count(errw.String(), "(agent stopping: terminated)"); got != copies {
		t.Errorf("%d notices of copies lost to the drain, want %d (one per copy on the agent):\n%s", got, copies, errw.String())
	}
	waitFor(t, 30*time.Second, "no stencil process left", func() bool { return len(stencilProcs(n)) == 0 })
}

// TestSubmitterCrashReattach: the agent a replicated job was submitted
// through is killed (SIGKILL: its own copies die with it) while the job
// computes, and started again on the same data dir. It re-attaches: the
// other hosts kept the job running and its reports; the copies on the
// killed agent are lost copies; the job ends done with the verified
// result, and no output line is in its job folder twice.
//
// The kill can come before every host got phase two's release (the record
// says running once every host started its processes): the re-attached
// job sends the release itself once every rank is in Init.
func TestSubmitterCrashReattach(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	n, bin, stencil := stencilNet(t, ctx)
	dir := n.Agents()[0].Dir
	sub := zorilla("submit", "--data-dir", dir, "--detach", "-n", "4", "-r", "2",
		stencil, "-iters", "300", "-delay", "20ms", "-block", "20000")
	id := job.ID(strings.TrimSpace(sub.stdout))
	if sub.code != 0 || id == "" {
		t.Fatalf("submit: %v", sub)
	}
	waitFor(t, time.Minute, "the job running", func() bool {
		st := zorilla("status", "--data-dir", dir, string(id))
		return strings.Contains(st.stdout, "state    running")
	})
	if err := n.Agents()[0].Process().Kill(); err != nil {
		t.Fatal(err)
	}
	<-n.Agents()[0].Exited()
	again := exec.Command(bin, "agent", "--data-dir", dir, "--listen", "/ip4/127.0.0.1/tcp/0", "--mdns=false",
		"--max-procs", "2", "--cores", "2", "--open", "--network", n.Network(), "--bootstrap", localnet.LoopbackAddr(n.Agents()[1].ID.Addrs))
	logf, err := os.Create(filepath.Join(n.Dir(), "a0-again.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	again.Stdout, again.Stderr = logf, logf
	if err := again.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = again.Process.Signal(syscall.SIGTERM)
		_ = again.Wait()
	}()
	var end job.Record
	ended := func() bool {
		cl, err := node.Dial(dir)
		if err != nil {
			return false
		}
		defer cl.Close()
		rec, err := cl.Job(ctx, id)
		end = rec
		return err == nil && rec.State.Terminal()
	}
	waitForSaying(t, 2*time.Minute, "the re-attached job's end", ended, func() string {
		return fmt.Sprintf("the job is %s (%s), history %+v\nits agent's log:\n%s",
			end.State, end.Reason, end.History, localnet.LogTail(logf.Name()))
	})
	out, err := os.ReadFile(filepath.Join(dir, "jobs", string(id), "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	if end.State != job.Done || !strings.Contains(string(out), "verified") {
		t.Fatalf("job ended %s (%s); stdout:\n%s", end.State, end.Reason, out)
	}
	seen := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if seen[l] {
			t.Errorf("line %q twice in the job's stdout:\n%s", l, out)
		}
		seen[l] = true
	}
	if end.Plan.Procs(n.Agents()[0].ID.ID) != nil && len(end.Lost) == 0 {
		t.Errorf("no lost copy recorded; the killed agent ran copies of the job")
	}
	waitFor(t, 30*time.Second, "no stencil process and no job folder left", func() bool {
		var folders []string
		for _, a := range n.Agents() {
			if _, err := os.Stat(filepath.Join(agentJobsDir(a), string(id))); err == nil {
				folders = append(folders, a.Dir)
			}
		}
		return len(stencilProcs(n)) == 0 && len(folders) == 0
	})
}

// submitStencil runs `zorilla submit` of the stencil program through
// agent 0 with the given flags, in the background, and waits until its
// ranks are released. It returns the command's stdout and stderr so far
// and where its exit status will come.
func submitStencil(t *testing.T, n *localnet.Net, stencil string, flags ...string) (out, errw *syncBuffer, code chan int) {
	t.Helper()
	out, errw, code = &syncBuffer{}, &syncBuffer{}, make(chan int, 1)
	args := append([]string{"zorilla", "submit", "--data-dir", n.Agents()[0].Dir}, flags...)
	args = append(args, stencil, "-iters", "250", "-delay", "20ms", "-block", "100000")
	go func() { code <- run(args, out, errw) }()
	waitFor(t, time.Minute, "the ranks released", func() bool { return strings.Contains(out.String(), "ranks started") })
	return out, errw, code
}

// awaitVerified waits for the stencil job's submit command and checks it
// exited 0 with the verified result.
func awaitVerified(t *testing.T, ctx context.Context, out, errw *syncBuffer, code <-chan int) {
	t.Helper()
	var c int
	select {
	case c = <-code:
	case <-ctx.Done():
		t.Fatalf("job still running:\n%s\n%s", out.String(), errw.String())
	}
	if c != 0 || !strings.Contains(out.String(), "verified") {
		t.Fatalf("exit %d\n--- stdout\n%s--- stderr\n%s", c, out.String(), errw.String())
	}
}

// stencilNet builds the zorilla binary and examples/stencil, and starts
// five agent processes offering two slots each; they stop when the test
// ends. It skips the test with -short.
func stencilNet(t *testing.T, ctx context.Context) (n *localnet.Net, bin, stencil string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary and starts agent processes")
	}
	bin = zorillaBinary(t)
	stencil = exampleBinary(t, "stencil")
	n, err := localnet.New("test", io.Discard, bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close(false) })
	if err := n.Up(ctx, 5, 2); err != nil {
		t.Fatal(err)
	}
	return n, bin, stencil
}

// agentJobsDir is where agent a runs its jobs (with the default --run-as).
func agentJobsDir(a *localnet.Agent) string { return node.JobsDirOf(a.Dir, os.Geteuid() == 0) }
