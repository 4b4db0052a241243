package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDemoEndToEnd builds the zorilla binary and runs `zorilla demo` as a
// user does: 8 agent processes on loopback, examples/pi built and run on 8
// ranks, one per agent, tagged output, a summary, and nothing left behind.
// Then Ctrl-C during a demo job cancels it and still stops every agent.
func TestDemoEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts agent processes")
	}
	bin := zorillaBinary(t)
	t.Run("pi on 8 agents", func(t *testing.T) {
		start := time.Now()
		r, dir := demoBinary(t, bin, nil, "demo")
		if r.code != 0 {
			t.Fatalf("demo: %v", r)
		}
		agentOf := map[string]string{}
		for _, m := range regexp.MustCompile(`(?m)^\[(\d)\] rank (\d) of 8 on \S+ \(agent (\S+)\): partial sum`).FindAllStringSubmatch(r.stdout, -1) {
			if m[1] != m[2] {
				t.Errorf("line tagged [%s] printed by rank %s", m[1], m[2])
			}
			agentOf[m[1]] = m[3]
		}
		if len(agentOf) != 8 || len(distinct(agentOf)) != 8 {
			t.Errorf("want 8 ranks on 8 distinct agents, got %v:\n%v", agentOf, r)
		}
		for _, want := range []string{"[0] pi is approximately 3.14159265358", " done in ", "8 ranks on 8 agents:"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("stdout lacks %q:\n%v", want, r)
			}
		}
		// The build says what it does before, and how long it took after:
		// with an empty Go build cache it is the longest step.
		if !regexp.MustCompile(`(?m)^zorilla demo: building examples/pi with go build .*\nzorilla demo: built examples/pi in \d\S*s\n`).MatchString(r.stderr) {
			t.Errorf("the demo did not say it built examples/pi and how long it took:\n%v", r)
		}
		t.Logf("demo took %v", time.Since(start))
		assertGone(t, dir)
	})
	t.Run("ctrl-c", func(t *testing.T) {
		prog := script(t, `echo "rank $ZORILLA_RANK waits"; exec sleep 60`)
		interrupt := func(stdout, _ *syncBuffer, p *os.Process) {
			waitFor(t, 30*time.Second, "every rank runs", func() bool { return strings.Count(stdout.String(), " waits") == 3 })
			_ = p.Signal(syscall.SIGINT)
		}
		r, dir := demoBinary(t, bin, interrupt, "demo", "--agents", "3", "--program", prog)
		if r.code != exitInterrupted || !strings.Contains(r.stderr, "cancelling job") || !strings.Contains(r.stdout, " cancelled in ") {
			t.Fatalf("demo after Ctrl-C: %v", r)
		}
		assertGone(t, dir)
	})
}

// demoBinary runs the binary, calling during (if any) with its stdout and
// stderr while it runs, and returns its result and the folder it said it
// kept its agents in.
func demoBinary(t *testing.T, bin string, during func(stdout, stderr *syncBuffer, p *os.Process), args ...string) (result, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var out, errw syncBuffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if during != nil {
		during(&out, &errw, cmd.Process)
	}
	err := cmd.Wait()
	r := result{code: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errw.String()}
	if err != nil && r.code <= 0 {
		t.Fatalf("demo: %v\n%v", err, r)
	}
	m := regexp.MustCompile(`data dirs in (\S+)\)`).FindStringSubmatch(r.stderr)
	if m == nil {
		t.Fatalf("the demo did not say where its agents live:\n%v", r)
	}
	return r, m[1]
}

// assertGone checks that the demo removed its folder and that no process
// still runs with it on its command line (the agents were started with
// their data dirs under it).
func assertGone(t *testing.T, dir string) {
	t.Helper()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("demo folder %s still there (%v)", dir, err)
	}
	for p, cmdline := range processes() {
		if bytes.Contains(cmdline, []byte(dir)) {
			t.Errorf("a process still runs from the demo folder: %s: %q", p, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
		}
	}
}

// processes maps each running process's /proc cmdline file to its
// contents (arguments separated by NUL bytes).
func processes() map[string][]byte {
	out := map[string][]byte{}
	files, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil {
			out[f] = b
		}
	}
	return out
}

func distinct(m map[string]string) map[string]bool {
	s := map[string]bool{}
	for _, v := range m {
		s[v] = true
	}
	return s
}
