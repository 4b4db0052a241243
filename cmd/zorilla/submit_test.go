package main

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A shell-script job on 3 ranks over 2 agents: every rank's stdout and
// stderr come back tagged with its rank, on the matching stream, the state
// changes are reported on stderr, and the command exits 0.
func TestSubmitStreamsTaggedOutput(t *testing.T) {
	nodes := agents(t, 2, 2)
	prog := script(t, `echo "hello from $ZORILLA_RANK of $ZORILLA_SIZE"; echo "note $ZORILLA_RANK" >&2`)
	r := zorilla("submit", "--data-dir", nodes[0].Config().DataDir, "-n", "3", "-a", "concentrate", prog)
	if r.code != 0 {
		t.Fatalf("submit: %v", r)
	}
	if got, want := sortedLines(r.stdout), []string{"[0] hello from 0 of 3", "[1] hello from 1 of 3", "[2] hello from 2 of 3"}; !equal(got, want) {
		t.Errorf("stdout lines %q, want %q", got, want)
	}
	for _, want := range []string{"[0] note 0\n", "[1] note 1\n", "[2] note 2\n", " reserving (+", " running (+", " done (+"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
}

// A failing rank fails the job: the command exits with that rank's status
// and names the rank.
func TestSubmitFailingRankGivesItsExitCode(t *testing.T) {
	nodes := agents(t, 2, 2)
	prog := script(t, `if [ "$ZORILLA_RANK" = 1 ]; then echo "rank 1 gives up" >&2; exit 3; fi; sleep 20`)
	start := time.Now()
	r := zorilla("submit", "--data-dir", nodes[0].Config().DataDir, "-n", "3", "-a", "concentrate", prog)
	if r.code != 3 {
		t.Fatalf("want exit 3: %v", r)
	}
	if !strings.Contains(r.stderr, "[1] rank 1 gives up") || !regexp.MustCompile(`job [a-z0-9]+ failed \(\+.*\): rank 1 exited`).MatchString(r.stderr) {
		t.Errorf("stderr does not name rank 1's failure:\n%s", r.stderr)
	}
	if time.Since(start) > 15*time.Second {
		t.Errorf("the other ranks were not killed: the command took %v", time.Since(start))
	}
}

// A job file gives the description; flags override it; inputs are staged
// beside the program, --env reaches every process, and --output files come
// back to the submitter's job folder.
func TestSubmitJobFileInputsEnvOutputs(t *testing.T) {
	nodes := agents(t, 2, 2)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "data.in"), []byte("payload"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "prog.sh"), []byte("#!/bin/sh\necho \"$GREETING $(cat data.in)\"\necho done > result.txt\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(file, []byte("executable: prog.sh\nnodes: 4\ninputs: [data.in]\noutputs: [result.txt]\nenv: {GREETING: hi}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := zorilla("submit", "--data-dir", nodes[0].Config().DataDir, "--file", file, "-n", "2", "--env", "GREETING=hey,you",
		"--output-dir", t.TempDir())
	if r.code != 0 {
		t.Fatalf("submit: %v", r)
	}
	if got, want := sortedLines(r.stdout), []string{"[0] hey,you payload", "[1] hey,you payload"}; !equal(got, want) {
		t.Errorf("stdout lines %q, want %q", got, want)
	}
	id := jobIDIn(t, r.stderr)
	outs, _ := filepath.Glob(filepath.Join(nodes[0].Config().DataDir, "jobs", id, "output", "*result.txt*"))
	if len(outs) == 0 {
		t.Errorf("no result.txt came back into the job folder %s", id)
	}
}

// --dry-run lists the offers of both agents, latency-sorted, and says the
// job is feasible; a job larger than the network is said not to be.
func TestSubmitDryRunListsOffers(t *testing.T) {
	nodes := agents(t, 2, 2)
	prog := script(t, `echo never runs`)
	dd := nodes[0].Config().DataDir
	r := zorilla("submit", "--data-dir", dd, "--dry-run", "-n", "3", "-a", "concentrate", prog)
	if r.code != 0 {
		t.Fatalf("dry run: %v", r)
	}
	for _, nd := range nodes {
		if !strings.Contains(r.stdout, nd.ID().String()) {
			t.Errorf("offers do not list agent %s:\n%s", nd.ID(), r.stdout)
		}
	}
	if !strings.Contains(r.stdout, "offers (rlist, closest first): 2") || !strings.Contains(r.stdout, "feasible: n=3 r=1 concentrate on 2 of 2 hosts") {
		t.Errorf("dry run output:\n%s", r.stdout)
	}
	if strings.Contains(r.stdout, "never runs") {
		t.Errorf("a dry run ran the program")
	}
	st := zorilla("status", "--data-dir", dd, jobIDIn(t, r.stderr))
	if !strings.Contains(st.stdout, "dry run") || !strings.Contains(st.stdout, "offers (rlist, closest first): 2") {
		t.Errorf("status of the dry run:\n%v", st)
	}
	r = zorilla("submit", "--data-dir", dd, "--dry-run", "--deadline", "1s", "-n", "5", prog)
	if r.code != 1 || !strings.Contains(r.stdout, "not feasible: n=5 r=1") || !strings.Contains(r.stdout, "4 of 5 process slots") {
		t.Errorf("infeasible dry run: %v", r)
	}
}

// --detach prints the job ID and returns at once; the job runs on.
func TestSubmitDetach(t *testing.T) {
	nodes := agents(t, 1, 2)
	dd := nodes[0].Config().DataDir
	r := zorilla("submit", "--data-dir", dd, "--detach", "-n", "2", "-a", "concentrate", script(t, "echo detached"))
	id := strings.TrimSpace(r.stdout)
	if r.code != 0 || len(id) != 26 {
		t.Fatalf("detach: %v", r)
	}
	waitFor(t, 20*time.Second, "the detached job is done", func() bool {
		return regexp.MustCompile(`(?m)^state\s+done since`).MatchString(zorilla("status", "--data-dir", dd, id).stdout)
	})
}

// Ctrl-C (SIGINT) on submit cancels the job everywhere, waits for its end
// and exits 130.
func TestSubmitInterruptCancelsTheJob(t *testing.T) {
	nodes := agents(t, 2, 2)
	prog := script(t, `echo started; exec sleep 30`)
	var out, errw syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"zorilla", "submit", "--data-dir", nodes[0].Config().DataDir, "-n", "2", prog}, &out, &errw)
	}()
	waitFor(t, 20*time.Second, "the job runs", func() bool {
		return strings.Count(out.String(), "started") == 2
	})
	// submit holds SIGINT (signal.NotifyContext) while it follows the job.
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != exitInterrupted || !strings.Contains(errw.String(), "cancelling job") || !strings.Contains(errw.String(), " cancelled (+") {
			t.Fatalf("exit %d, stderr:\n%s", code, errw.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("submit did not end after Ctrl-C; stderr:\n%s", errw.String())
	}
}

// Bad command lines are refused with a clear error and exit status 2,
// before the agent is asked anything.
func TestBadCommandLinesExit2(t *testing.T) {
	dd := t.TempDir() // no agent here: a usage error must come first
	prog := script(t, "true")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"submit", "--data-dir", dd}, "PROGRAM is required"},
		{[]string{"submit", "--data-dir", dd, "-n", "0", prog}, "nodes: must be >= 1"},
		{[]string{"submit", "--data-dir", dd, "-n", "x", prog}, "want a whole number or MIN:MAX"},
		{[]string{"submit", "--data-dir", dd, "-a", "sideways", prog}, "strategy"},
		{[]string{"submit", "--data-dir", dd, "-r", "0", prog}, "replicas"},
		{[]string{"submit", "--data-dir", dd, "--env", "NOEQUALS", prog}, "--env"},
		{[]string{"submit", "--data-dir", dd, "--env", "ZORILLA_RANK=1", prog}, "ZORILLA_"},
		{[]string{"submit", "--data-dir", dd, "--require", "colour=red", prog}, "unknown key"},
		{[]string{"submit", "--data-dir", dd, "--timeout", "10ms", prog}, "timeout"},
		{[]string{"submit", "--data-dir", dd, "--bogus", prog}, "bogus"},
		{[]string{"submit", "--data-dir", dd, "--output", "../escape", prog}, "outputs[0]"},
		{[]string{"submit", "--data-dir", dd, "--input", "/no/such/file", prog}, "no such file"},
		{[]string{"submit", "--data-dir", dd, "/no/such/program"}, "program"},
		{[]string{"submit", "--data-dir", dd, "--file", "/no/such.yaml"}, "job file"},
		{[]string{"submit", "--data-dir", dd, "--file", prog, prog}, "not both"},
		{[]string{"status", "--data-dir", dd, "a", "b"}, "one JOB"},
		{[]string{"status", "--data-dir", dd, "../etc"}, "job id"},
		{[]string{"cancel", "--data-dir", dd}, "one JOB"},
		{[]string{"stop", "--data-dir", dd, "--checkpoint"}, "one JOB"},
		{[]string{"stop", "--data-dir", dd, "abc"}, "needs --checkpoint"},
		{[]string{"stop", "--data-dir", dd, "--checkpoint", "--timeout", "0s", "abc"}, "--timeout"},
		{[]string{"resume", "--data-dir", dd}, "one JOB"},
		{[]string{"jobs", "--data-dir", dd, "extra"}, "no arguments"},
		{[]string{"demo", "--agents", "0"}, "--agents"},
		{[]string{"demo", "--procs", "100"}, "--procs"},
		{[]string{"demo", "--agents", "2", "-n", "5"}, "-n: must be 1..4"},
		{[]string{"demo", "--program", "/no/such/program"}, "no such file"},
		{[]string{"demo", "--timeout", "1ms"}, "--timeout"},
		{[]string{"demo", "-a", "round"}, "strategy"},
		{[]string{"demo", "--checkpoint-every", "-1s"}, "--checkpoint-every"},
	} {
		r := zorilla(c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%q: want exit 2 mentioning %q, got %v", c.args, c.want, r)
		}
	}
}

// A command whose agent is not running says so in one line and exits 1.
func TestAgentNotRunning(t *testing.T) {
	dd := t.TempDir()
	for _, args := range [][]string{{"jobs"}, {"status", "abc"}, {"cancel", "abc"}, {"resume", "abc"}, {"stop", "--checkpoint", "abc"}, {"submit", "-n", "1", script(t, "true")}} {
		r := zorilla(append([]string{args[0], "--data-dir", dd}, args[1:]...)...)
		if r.code != 1 || !strings.Contains(r.stderr, "agent is not running") || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%q: %v", args, r)
		}
	}
}

func sortedLines(s string) []string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	sort.Strings(lines)
	return lines
}

func equal(a, b []string) bool { return strings.Join(a, "\n") == strings.Join(b, "\n") }

// jobIDIn finds the job ID in submit's progress lines.
func jobIDIn(t *testing.T, stderr string) string {
	t.Helper()
	m := regexp.MustCompile(`job ([a-z0-9]{26}) `).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no job ID in:\n%s", stderr)
	}
	return m[1]
}
