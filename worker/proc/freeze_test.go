//go:build linux

package proc

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// procState is the state letter of pid in /proc ("T" stopped, "S", "R"...).
func procState(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "gone"
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

// stopped reports whether pid is stopped by SIGSTOP: in state T, or in
// state D with SIGSTOP pending (a shell that vforked a child the signal
// stopped before its exec waits, uninterruptibly, for the child: it takes
// the stop as soon as it wakes, and does not run before).
func stopped(pid int) bool {
	switch procState(pid) {
	case "T", "t":
		return true
	case "D":
		return stopPending(pid)
	}
	return false
}

// stopPending reads whether SIGSTOP is pending for pid (thread or group).
func stopPending(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "SigPnd" && k != "ShdPnd") {
			continue
		}
		if mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64); err == nil && mask&(1<<(19-1)) != 0 {
			return true
		}
	}
	return false
}

// waitStopped waits until pid is stopped (want) or not (!want).
func waitStopped(t *testing.T, pid int, want bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for stopped(pid) != want {
		if time.Now().After(deadline) {
			t.Fatalf("pid %d: state %q, want stopped=%v within %v", pid, procState(pid), want, waitLimit)
		}
		time.Sleep(time.Millisecond) // /proc offers no wait on a state change
	}
}

// childPid reads the pid a script wrote to file once it is there.
func childPid(t *testing.T, file string) int {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		b, err := os.ReadFile(file)
		if n, perr := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && perr == nil && n > 0 {
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pid in %s within %v", file, waitLimit)
		}
		time.Sleep(time.Millisecond)
	}
}

// Freeze stops the leader and its children; Thaw continues them.
func TestFreezeStopsWholeGroup(t *testing.T) {
	s := shSpec(t, `sleep 60 & echo $! > child; echo up; wait`)
	c := newCollector()
	p := start(t, testConfig(), s, c)
	c.waitFor(t, "up")
	child := childPid(t, filepath.Join(s.Dir, "child"))
	if err := Freeze(nil, []Process{p}); err != nil {
		t.Fatal(err)
	}
	for _, pid := range []int{p.Pid(), child} {
		waitStopped(t, pid, true)
	}
	if err := Freeze(nil, []Process{p}); err != nil { // a no-op
		t.Fatal(err)
	}
	if err := Thaw(nil, []Process{p}); err != nil {
		t.Fatal(err)
	}
	for _, pid := range []int{p.Pid(), child} {
		waitStopped(t, pid, false)
	}
}

// holdFrozen freezes p (through b's freezer, or signals when b is nil)
// for a while longer than its wall-clock limit, failing if it ends
// meanwhile, thaws it and returns how long it was held.
func holdFrozen(t *testing.T, b *Sandbox, p Process) time.Duration {
	t.Helper()
	if err := Freeze(b, []Process{p}); err != nil {
		t.Fatal(err)
	}
	const held = 800 * time.Millisecond
	select {
	case <-p.Done():
		t.Fatalf("a frozen process ended (%s): its limit ran while frozen", p.Wait())
	case <-time.After(held): // the measurement window: the process must not end in it
	}
	if err := Thaw(b, []Process{p}); err != nil {
		t.Fatal(err)
	}
	return held
}

// wallLimit is the wall-clock limit of the tests of frozen time: long
// enough for a loaded machine to start the shell, see its first line and
// freeze it before the limit, which a frozen process must then outlive.
const wallLimit = 3 * time.Second

// Frozen time does not count against the wall-clock limit, and Exit says
// how long the process was frozen.
func TestFreezeStopsWallClock(t *testing.T) {
	s := shSpec(t, `echo up; sleep 60`)
	s.Timeout = wallLimit
	c := newCollector()
	p := start(t, testConfig(), s, c)
	c.waitFor(t, "up")
	held := holdFrozen(t, nil, p)
	e := wait(t, p)
	if !e.TimedOut {
		t.Fatalf("exit %s: want timed out once thawed", e)
	}
	if e.Frozen < held {
		t.Fatalf("Exit.Frozen = %v, want at least %v", e.Frozen, held)
	}
}

// Kill of a frozen process continues it, so its SIGTERM handler runs.
func TestKillFrozenProcess(t *testing.T) {
	s := shSpec(t, `trap 'echo term; exit 3' TERM; echo up; while :; do sleep 0.05; done`)
	c := newCollector()
	cfg := testConfig()
	cfg.KillGrace = 10 * time.Second // the trap answers at once; a loaded machine may take its time to run it
	p := start(t, cfg, s, c)
	c.waitFor(t, "up")
	if err := Freeze(nil, []Process{p}); err != nil {
		t.Fatal(err)
	}
	waitStopped(t, p.Pid(), true)
	_ = p.Kill()
	e := wait(t, p)
	if !e.Killed || e.Code != 3 {
		t.Fatalf("exit %s (code %d): want killed, code 3 from the TERM trap", e, e.Code)
	}
	if err := Thaw(nil, []Process{p}); err != nil { // ended: a no-op
		t.Fatal(err)
	}
}

// A process this package did not start cannot be frozen; the others of
// the call still are.
func TestFreezeForeignProcess(t *testing.T) {
	s := shSpec(t, `echo up; sleep 60`)
	c := newCollector()
	p := start(t, testConfig(), s, c)
	c.waitFor(t, "up")
	err := Freeze(nil, []Process{fakeProcess{}, p})
	if !errors.Is(err, ErrNotFreezable) {
		t.Fatalf("Freeze = %v, want ErrNotFreezable", err)
	}
	waitStopped(t, p.Pid(), true)
	if err := Thaw(nil, []Process{p}); err != nil {
		t.Fatal(err)
	}
}

type fakeProcess struct{}

func (fakeProcess) Pid() int              { return 1 << 30 }
func (fakeProcess) Wait() Exit            { return Exit{} }
func (fakeProcess) Kill() error           { return nil }
func (fakeProcess) Done() <-chan struct{} { return nil }

// In a sandbox, a process that left its process group is frozen too (by
// the cgroup: the v2 freezer, or the v1 cgroup's process list).
func TestFreezeSandboxEscapee(t *testing.T) {
	r := sandboxRunner(t)
	base := reachableBase(t)
	b := newSandbox(t, r, "job-freeze", Resources{})
	c := newCollector()
	s := Spec{Job: "job-freeze", Size: 1, Dir: filepath.Join(base, "job-freeze"), Program: "/bin/sh",
		Args: []string{"-c", `setsid sleep 60 & echo $! > esc; echo up; sleep 60`}, Sandbox: b}
	p, err := r.Start(context.Background(), s, c.out)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Kill(); <-p.Done() })
	c.waitFor(t, "up")
	esc := childPid(t, filepath.Join(s.Dir, "esc"))
	if err := Freeze(b, []Process{p}); err != nil {
		t.Fatal(err)
	}
	if dir := b.freezerDir(); dir != "" {
		ev, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
		if err != nil || !strings.Contains(string(ev), "frozen 1") {
			t.Fatalf("cgroup.events %q (%v): want frozen 1", ev, err)
		}
	} else {
		waitStopped(t, esc, true)
		waitStopped(t, p.Pid(), true)
	}
	if err := Thaw(b, []Process{p}); err != nil {
		t.Fatal(err)
	}
	waitStopped(t, esc, false)
}
