//go:build linux

package proc

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// v2FreezerRunner is sandboxRunner when its sandboxes freeze with the
// cgroup v2 freezer (on a v2 or a hybrid machine); it skips the test
// where there is no cgroup2 hierarchy to use.
func v2FreezerRunner(t *testing.T) *osRunner {
	t.Helper()
	r := sandboxRunner(t)
	if r.cgroups.freezer == "" {
		t.Skipf("no cgroup v2 freezer here (%s)", r.iso.Freezer)
	}
	return r
}

// fileSize is the size of path, 0 while it does not exist.
func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// waitGrows waits until path is larger than n bytes.
func waitGrows(t *testing.T, path string, n int64) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for fileSize(t, path) <= n {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not grow past %d bytes within %v", path, n, waitLimit)
		}
		time.Sleep(5 * time.Millisecond) // the file offers no wait on a write
	}
}

// cgroupFrozen reads the "frozen" field of a cgroup v2's cgroup.events.
func cgroupFrozen(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "frozen "); ok {
			return v
		}
	}
	t.Fatalf("no frozen field in cgroup.events: %q", b)
	return ""
}

// counterJob is a job whose shell appends to "ticks" (forking a sleep
// each time) and whose child, in a session of its own, appends to "esc".
const counterJob = `setsid sh -c 'while :; do echo x >> esc; sleep 0.01; done' </dev/null >/dev/null 2>&1 &
echo $! > escpid
trap 'echo term; exit 3' TERM
echo up
while :; do echo x >> ticks; sleep 0.01; done`

// startCounter starts counterJob in sandbox b and waits until both
// counters run.
func startCounter(t *testing.T, r *osRunner, b *Sandbox, base, name string) (Process, string) {
	t.Helper()
	c := newCollector()
	s := Spec{Job: name, Size: 1, Dir: filepath.Join(base, name), Program: "/bin/sh",
		Args: []string{"-c", counterJob}, Sandbox: b}
	p, err := r.Start(context.Background(), s, c.out)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Kill(); <-p.Done() })
	c.waitFor(t, "up")
	waitGrows(t, filepath.Join(s.Dir, "ticks"), 0)
	waitGrows(t, filepath.Join(s.Dir, "esc"), 0)
	return p, s.Dir
}

// heldFrozen is how long a test watches a frozen job for progress: many
// of its 10 ms steps, even on a loaded machine.
const heldFrozen = 300 * time.Millisecond

// Frozen by the v2 freezer, a job and its child that left the process
// group both stop (their counters stay still, cgroup.events says frozen
// 1, nothing got SIGSTOP), and both go on once thawed.
func TestFreezeV2StopsAndThaws(t *testing.T) {
	r := v2FreezerRunner(t)
	b := newSandbox(t, r, "job-v2", Resources{})
	p, dir := startCounter(t, r, b, reachableBase(t), "job-v2")
	esc := childPid(t, filepath.Join(dir, "escpid"))
	files := []string{filepath.Join(dir, "ticks"), filepath.Join(dir, "esc")}
	if err := Freeze(b, []Process{p}); err != nil {
		t.Fatal(err)
	}
	if got := cgroupFrozen(t, b.freezerDir()); got != "1" {
		t.Fatalf("cgroup.events frozen %s after Freeze, want 1", got)
	}
	var sizes []int64
	for _, f := range files {
		sizes = append(sizes, fileSize(t, f))
	}
	time.Sleep(heldFrozen) // the time the job is watched not to progress
	for i, f := range files {
		if n := fileSize(t, f); n != sizes[i] {
			t.Fatalf("%s grew from %d to %d bytes while frozen", f, sizes[i], n)
		}
	}
	for _, pid := range []int{p.Pid(), esc} {
		if stopped(pid) {
			t.Fatalf("pid %d is stopped by a signal: the v2 freezer should hold it", pid)
		}
	}
	if err := Thaw(b, []Process{p}); err != nil {
		t.Fatal(err)
	}
	if got := cgroupFrozen(t, b.freezerDir()); got != "0" {
		t.Fatalf("cgroup.events frozen %s after Thaw, want 0", got)
	}
	for i, f := range files {
		waitGrows(t, f, sizes[i])
	}
}

// Kill of a job frozen by the v2 freezer ends it (its TERM trap runs),
// and closing the sandbox and the runner leaves no cgroup v2 behind.
func TestKillFrozenV2Job(t *testing.T) {
	r := v2FreezerRunner(t)
	b, err := r.NewSandbox("job-v2kill", Resources{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	p, dir := startCounter(t, r, b, reachableBase(t), "job-v2kill")
	esc := childPid(t, filepath.Join(dir, "escpid"))
	if err := Freeze(b, []Process{p}); err != nil {
		t.Fatal(err)
	}
	jobDir := b.freezerDir()
	_ = p.Kill()
	e := wait(t, p)
	if !e.Killed || e.Code != 3 {
		t.Fatalf("exit %s (code %d): want killed, code 3 from the TERM trap", e, e.Code)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if st := procState(esc); st != "gone" && st != "Z" {
		t.Fatalf("the job's escaped child %d outlived its sandbox (state %s)", esc, st)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{jobDir, r.cgroups.freezer} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Fatalf("cgroup %s still there after Close: %v", d, err)
		}
	}
}

// Time frozen by the v2 freezer does not count against the wall-clock
// limit either, and Exit says how long the process was frozen.
func TestFreezeV2StopsWallClock(t *testing.T) {
	r := v2FreezerRunner(t)
	b := newSandbox(t, r, "job-v2clock", Resources{})
	c := newCollector()
	s := Spec{Job: "job-v2clock", Size: 1, Dir: filepath.Join(reachableBase(t), "job-v2clock"), Program: "/bin/sh",
		Args: []string{"-c", "echo up; sleep 60"}, Sandbox: b, Timeout: wallLimit}
	p, err := r.Start(context.Background(), s, c.out)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Kill(); <-p.Done() })
	c.waitFor(t, "up")
	held := holdFrozen(t, b, p)
	e := wait(t, p)
	if !e.TimedOut || e.Frozen < held {
		t.Fatalf("exit %s, frozen %v: want timed out once thawed, frozen at least %v", e, e.Frozen, held)
	}
}
