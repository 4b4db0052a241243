package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestExitStatus(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		script string
		code   int
		signal string
		ok     bool
	}{
		{"exit 0", 0, "", true},
		{"exit 7", 7, "", false},
		{"kill -USR1 $$", 128 + int(unix.SIGUSR1), "SIGUSR1", false},
		{"kill -KILL $$", 128 + int(unix.SIGKILL), "SIGKILL", false},
	} {
		t.Run(tc.script, func(t *testing.T) {
			t.Parallel()
			p := start(t, testConfig(), shSpec(t, tc.script), nil)
			e := wait(t, p)
			if e.Code != tc.code || e.Signal != tc.signal || e.Success() != tc.ok || e.Killed || e.TimedOut || e.Err != nil {
				t.Fatalf("exit %+v (%s), want code %d signal %q", e, e, tc.code, tc.signal)
			}
			assertGroupGone(t, p.Pid())
		})
	}
}

func TestOutputLinesInOrder(t *testing.T) {
	t.Parallel()
	c := newCollector()
	const n = 500
	p := start(t, testConfig(), shSpec(t, fmt.Sprintf(
		`i=1; while [ $i -le %d ]; do echo out$i; echo err$i >&2; i=$((i+1)); done`, n)), c)
	<-p.Done() // every line is delivered before Done
	if e := wait(t, p); !e.Success() {
		t.Fatalf("exit %s", e)
	}
	for stream, prefix := range map[string]string{Stdout: "out", Stderr: "err"} {
		got := c.all(stream)
		if len(got) != n {
			t.Fatalf("%s: %d lines, want %d", stream, len(got), n)
		}
		for i, l := range got {
			if want := prefix + strconv.Itoa(i+1); l != want {
				t.Fatalf("%s line %d = %q, want %q", stream, i, l, want)
			}
		}
	}
}

func TestLongLinesSplit(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.MaxLineBytes = 100
	c := newCollector()
	p := start(t, cfg, shSpec(t,
		`head -c 250 /dev/zero | tr '\0' x; echo; head -c 100 /dev/zero | tr '\0' y; echo; printf end`), c)
	wait(t, p)
	x, y := strings.Repeat("x", 100), strings.Repeat("y", 100)
	want := []string{x, x, x[:50], y, "end"}
	if got := c.all(Stdout); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("pieces %q, want %q", got, want)
	}
}

func TestTailKeepsLastLines(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.TailLines = 10
	p := start(t, cfg, shSpec(t, `echo fatal >&2; i=1; while [ $i -le 50 ]; do echo line$i; i=$((i+1)); done; exit 3`), nil)
	e := wait(t, p)
	if e.Code != 3 || len(e.Tail) != 10 {
		t.Fatalf("exit %s with %d tail lines, want code 3 and 10", e, len(e.Tail))
	}
	// The two streams are separate pipes: where the stderr line falls among
	// the last stdout lines is up to the scheduler, but the stdout lines
	// must be the last ones, in order.
	var out []string
	for _, l := range e.Tail {
		if l.Stream == Stdout {
			out = append(out, l.Text)
		}
	}
	for i, l := range out {
		if want := "line" + strconv.Itoa(50-len(out)+1+i); l != want {
			t.Fatalf("tail %v: stdout line %d is %q, want %q", e.Tail, i, l, want)
		}
	}
}

func TestEnvironment(t *testing.T) {
	t.Parallel()
	for _, limits := range []Limits{{}, {OpenFiles: 100}} { // direct exec, and through the shim
		c := newCollector()
		s := shSpec(t, "env")
		s.Rank, s.Size, s.Replica, s.Job = 2, 4, 1, "job-env"
		s.Env = []string{"FOO=bar=baz", "PATH=/bin"}
		s.Limits = limits
		wait(t, start(t, testConfig(), s, c))
		got := c.all(Stdout)
		for k, want := range map[string]string{
			"PATH": "/bin", "HOME": s.Dir, "TMPDIR": s.Dir, "FOO": "bar=baz",
			EnvJob: "job-env", EnvRank: "2", EnvSize: "4", EnvReplica: "1",
		} {
			if v, ok := field(got, k); !ok || v != want {
				t.Errorf("limits %+v: %s=%q (set %v), want %q", limits, k, v, ok, want)
			}
		}
		allowed := "PATH HOME TMPDIR FOO ZORILLA_JOB ZORILLA_RANK ZORILLA_SIZE ZORILLA_REPLICA PWD OLDPWD SHLVL _"
		for _, l := range got {
			k, _, _ := strings.Cut(l, "=")
			if !strings.Contains(" "+allowed+" ", " "+k+" ") {
				t.Errorf("limits %+v: unexpected variable %q in the environment", limits, l)
			}
		}
	}
}

func TestRunsInJobFolder(t *testing.T) {
	t.Parallel()
	c := newCollector()
	s := shSpec(t, "pwd; echo data > out.txt")
	p := start(t, testConfig(), s, c)
	wait(t, p)
	if got := c.all(Stdout); len(got) != 1 || got[0] != s.Dir {
		t.Fatalf("pwd printed %q, want %s", got, s.Dir)
	}
	info, err := os.Stat(s.Dir)
	if err != nil || info.Mode().Perm() != 0o700 {
		t.Fatalf("job folder %v %v, want mode 0700", info, err)
	}
	if err := Cleanup(s.Dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.Dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("job folder still there after Cleanup: %v", err)
	}
}

func TestKillProcessTree(t *testing.T) {
	t.Parallel()
	c := newCollector()
	// A child that forks a grandchild, and a second child.
	p := start(t, testConfig(), shSpec(t, `sh -c 'sleep 1000 & wait' & sleep 1000 & echo ready; wait`), c)
	c.waitFor(t, "ready")
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	e := wait(t, p)
	if !e.Killed || e.TimedOut || e.Signal != "SIGTERM" || e.Err != nil {
		t.Fatalf("exit %+v, want killed by SIGTERM", e)
	}
	assertGroupGone(t, p.Pid())
	if err := p.Kill(); err != nil {
		t.Fatalf("Kill after exit: %v", err)
	}
	if again := p.Wait(); again.Signal != e.Signal || again.Killed != e.Killed {
		t.Fatalf("second Wait %+v differs from first %+v", again, e)
	}
}

func TestKillEscalatesToSIGKILL(t *testing.T) {
	t.Parallel()
	c := newCollector()
	// SIG_IGN is inherited, so the sleeps ignore SIGTERM too.
	p := start(t, testConfig(), shSpec(t, `trap '' TERM; echo ready; while :; do sleep 1; done`), c)
	c.waitFor(t, "ready")
	_ = p.Kill()
	e := wait(t, p)
	if !e.Killed || e.Signal != "SIGKILL" {
		t.Fatalf("exit %+v, want killed by SIGKILL after the grace period", e)
	}
	assertGroupGone(t, p.Pid())
}

func TestKillStoppedGroup(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.KillGrace = waitLimit // only SIGTERM (with SIGCONT) can end it in time
	c := newCollector()
	p := start(t, cfg, shSpec(t, `echo ready; exec sleep 1000`), c)
	c.waitFor(t, "ready")
	if err := unix.Kill(-p.Pid(), unix.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	_ = p.Kill()
	if e := wait(t, p); e.Signal != "SIGTERM" {
		t.Fatalf("exit %+v, want SIGTERM to reach the stopped group", e)
	}
}

func TestWallClockTimeout(t *testing.T) {
	t.Parallel()
	s := shSpec(t, `sleep 1000 & exec sleep 1000`)
	s.Timeout = 300 * time.Millisecond
	p := start(t, testConfig(), s, nil)
	e := wait(t, p)
	if !e.TimedOut || e.Killed || e.Signal != "SIGTERM" || e.Success() {
		t.Fatalf("exit %+v, want timed out by SIGTERM", e)
	}
	assertGroupGone(t, p.Pid())
}

func TestContextEndKills(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	c := newCollector()
	p, err := NewRunner(testConfig()).Start(ctx, shSpec(t, `echo ready; exec sleep 1000`), c.out)
	if err != nil {
		t.Fatal(err)
	}
	c.waitFor(t, "ready")
	cancel()
	if e := wait(t, p); !e.Killed || e.Signal != "SIGTERM" {
		t.Fatalf("exit %+v, want killed", e)
	}
	assertGroupGone(t, p.Pid())
}

// TestOrphansReaped: the leader exits while its child still runs. That
// child is killed, and reaped by the agent even though init here may not
// reap orphans.
func TestOrphansReaped(t *testing.T) {
	t.Parallel()
	c := newCollector()
	p := start(t, testConfig(), shSpec(t, `sleep 1000 & echo $!`), c)
	e := wait(t, p)
	if !e.Success() {
		t.Fatalf("exit %s", e)
	}
	assertGroupGone(t, p.Pid())
	out := c.all(Stdout)
	if len(out) != 1 {
		t.Fatalf("output %q, want the orphan's pid", out)
	}
	orphan, err := strconv.Atoi(out[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Kill(orphan, 0); !errors.Is(err, unix.ESRCH) {
		t.Fatalf("orphan %d: kill(pid, 0) = %v, want ESRCH (gone and reaped)", orphan, err)
	}
}

func TestStartErrors(t *testing.T) {
	t.Parallel()
	notExec := filepath.Join(t.TempDir(), "data.txt")
	if err := os.WriteFile(notExec, []byte("not a program"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, limits := range []Limits{{}, {OpenFiles: 100}} { // direct exec, and through the shim
		for program, want := range map[string]error{
			"/nonexistent/program": fs.ErrNotExist,
			notExec:                fs.ErrPermission,
		} {
			s := shSpec(t, "")
			s.Program, s.Limits = program, limits
			p, err := NewRunner(testConfig()).Start(context.Background(), s, nil)
			if !errors.Is(err, want) || p != nil {
				t.Errorf("Start %s with limits %+v: %v, want %v", program, limits, err, want)
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := NewRunner(testConfig()).Start(ctx, shSpec(t, "exit 0"), nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Start with an ended ctx: %v", err)
	}
	bad := testConfig()
	bad.KillGrace = 0
	if _, err := NewRunner(bad).Start(context.Background(), shSpec(t, "exit 0"), nil); err == nil {
		t.Error("a Runner with an invalid Config started a process")
	}
}

// TestStartErrorsOfTheProgram: programs the kernel will not run say why,
// and wrap ErrProgram; a missing program does not (it is the agent's
// fault, not the program's).
func TestStartErrorsOfTheProgram(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string, b []byte, mode os.FileMode) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, mode); err != nil {
			t.Fatal(err)
		}
		return path
	}
	cases := map[string]string{
		write("garbage", []byte("\x00\x01 not a program"), 0o755):          "exec format error",
		write("noexec", []byte("#!/bin/sh\n"), 0o644):                      "permission denied",
		write("script", []byte("#!/nonexistent/zsh -e\necho hi\n"), 0o755): "its interpreter /nonexistent/zsh (from its #! line) is missing",
	}
	if bin, err := os.ReadFile("/bin/true"); err == nil {
		if loader := bytes.Index(bin, []byte("/lib64/ld-linux-x86-64.so.2")); loader >= 0 {
			copy(bin[loader:], "/lib64/ld-missing-x86-64.so")
			cases[write("dynamic", bin, 0o755)] = "dynamically linked and its loader /lib64/ld-missing-x86-64.so is missing on this host"
		}
	}
	for _, limits := range []Limits{{}, {OpenFiles: 100}} { // direct exec, and through the shim
		for program, want := range cases {
			s := shSpec(t, "")
			s.Program, s.Limits = program, limits
			p, err := NewRunner(testConfig()).Start(context.Background(), s, nil)
			if !errors.Is(err, ErrProgram) || err == nil || !strings.Contains(err.Error(), want) || p != nil {
				t.Errorf("Start %s with limits %+v: %v, want ErrProgram saying %q", filepath.Base(program), limits, err, want)
			}
		}
		s := shSpec(t, "")
		s.Program, s.Limits = filepath.Join(dir, "absent"), limits
		if _, err := NewRunner(testConfig()).Start(context.Background(), s, nil); errors.Is(err, ErrProgram) || !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Start of a missing program: %v, want ErrNotExist only", err)
		}
	}
}

func TestInvalidSpecChangesNothing(t *testing.T) {
	t.Parallel()
	s := shSpec(t, "exit 0")
	s.Rank = 5 // Size is 1
	if _, err := NewRunner(testConfig()).Start(context.Background(), s, nil); err == nil {
		t.Fatal("Start accepted rank 5 of 1")
	}
	if _, err := os.Stat(s.Dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("job folder created for a refused spec: %v", err)
	}
}

func BenchmarkStart(b *testing.B) {
	for name, limits := range map[string]Limits{"direct": {}, "shim": {OpenFiles: 256}} {
		b.Run(name, func(b *testing.B) {
			r := NewRunner(testConfig())
			s := Spec{Job: "bench", Size: 1, Dir: filepath.Join(b.TempDir(), "job"), Program: "/bin/true", Limits: limits}
			for b.Loop() {
				p, err := r.Start(context.Background(), s, nil)
				if err != nil {
					b.Fatal(err)
				}
				if e := p.Wait(); !e.Success() {
					b.Fatal(e)
				}
			}
		})
	}
}

// TestEscapedProcessReported: a process that leaves its group (setsid)
// escapes the group kill; if it holds the output open, Wait still returns
// after SettleTimeout and says so in Exit.Err.
func TestEscapedProcessReported(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.SettleTimeout = 300 * time.Millisecond
	c := newCollector()
	// The leader exits only once the child has left the group.
	p := start(t, cfg, shSpec(t, `setsid sh -c 'touch escaped; exec sleep 1000' &
		while [ ! -e escaped ]; do sleep 0.01; done; echo $!`), c)
	e := wait(t, p)
	if out := c.all(Stdout); len(out) == 1 {
		if pid, err := strconv.Atoi(out[0]); err == nil {
			_ = unix.Kill(pid, unix.SIGKILL)
			var ws unix.WaitStatus
			_, _ = unix.Wait4(pid, &ws, 0, nil) // it was left to this process, the subreaper
		}
	}
	if e.Code != 0 || e.Err == nil || !strings.Contains(e.Err.Error(), "left its group") {
		t.Fatalf("exit %+v, want status 0 and an error about the escaped process", e)
	}
}

// TestShimSeesNoJobEnvironment: the shim may run as root in a dynamically
// linked binary, so variables of the job (LD_PRELOAD, GODEBUG...) must reach
// only the program. GODEBUG=inittrace=1 would make the shim's Go runtime
// print its init trace on stderr.
func TestShimSeesNoJobEnvironment(t *testing.T) {
	t.Parallel()
	c := newCollector()
	s := shSpec(t, `echo "$GODEBUG"`)
	s.Env = []string{"GODEBUG=inittrace=1"}
	s.Limits = Limits{OpenFiles: 100}
	if e := wait(t, start(t, testConfig(), s, c)); !e.Success() {
		t.Fatalf("exit %s: %v", e, e.Tail)
	}
	if out, errs := c.all(Stdout), c.all(Stderr); len(out) != 1 || out[0] != "inittrace=1" || len(errs) != 0 {
		t.Fatalf("stdout %q, stderr %q: want the program alone to see GODEBUG", out, errs)
	}
}
