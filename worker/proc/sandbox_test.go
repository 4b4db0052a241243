//go:build linux

package proc

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

var sandboxSeq atomic.Int64

// sandboxRunner is a runner with every part of the sandbox on, its cgroups
// under a name of its own (removed at the end), as root. It skips the test
// when not root or when cgroups cannot be written.
func sandboxRunner(t testing.TB) *osRunner {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the sandbox needs the agent to run as root")
	}
	cfg := testConfig()
	cfg.Cgroups = true
	cfg.CgroupName = fmt.Sprintf("zorilla-test-%d-%d", os.Getpid(), sandboxSeq.Add(1))
	cfg.AutoUsers = &DefaultUIDRange
	r := NewRunner(cfg).(*osRunner)
	if r.err != nil {
		t.Fatal(r.err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("runner Close: %v", err)
		}
	})
	if r.cgroups == nil {
		t.Skipf("cgroups cannot be written here: %s", r.iso.Cgroups)
	}
	return r
}

// newSandbox makes a sandbox closed at the end of the test.
func newSandbox(t *testing.T, r *osRunner, name string, res Resources) *Sandbox {
	t.Helper()
	b, err := r.NewSandbox(name, res)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("sandbox Close: %v", err)
		}
	})
	return b
}

// reachableBase is a folder every user may traverse (not list), as an
// agent's jobs folder is.
func reachableBase(t testing.TB) string {
	t.Helper()
	base, err := os.MkdirTemp("", "zorilla-sandbox-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	if err := os.Chmod(base, 0o711); err != nil {
		t.Fatal(err)
	}
	return base
}

// runIn runs script in sandbox b, in folder base/name, and waits for it.
func runIn(t *testing.T, r *osRunner, b *Sandbox, base, name, script string) (Exit, *collector) {
	t.Helper()
	c := newCollector()
	s := Spec{Job: name, Size: 1, Dir: filepath.Join(base, name), Program: "/bin/sh",
		Args: []string{"-c", script}, Sandbox: b}
	p, err := r.Start(context.Background(), s, c.out)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = p.Kill(); <-p.Done() })
	return wait(t, p), c
}

// Each sandbox has a user ID of its own from the range, which owns its
// folder; processes run as it, with no_new_privs; Close gives it back.
func TestSandboxOwnUser(t *testing.T) {
	r := sandboxRunner(t)
	base := reachableBase(t)
	a := newSandbox(t, r, "job-a", Resources{})
	b := newSandbox(t, r, "job-b", Resources{})
	if a.cred == nil || b.cred == nil || a.cred.UID == b.cred.UID {
		t.Fatalf("credentials %v and %v: want two distinct users", a.cred, b.cred)
	}
	for _, sb := range []*Sandbox{a, b} {
		if sb.cred.UID < DefaultUIDRange.First || sb.cred.UID >= DefaultUIDRange.First+DefaultUIDRange.Count || sb.cred.GID != sb.cred.UID {
			t.Fatalf("credential %+v outside %v", sb.cred, DefaultUIDRange)
		}
	}
	e, c := runIn(t, r, a, base, "job-a", `id -u; id -g; grep NoNewPrivs /proc/self/status; grep -c /job-a- /proc/self/cgroup`)
	// One line of /proc/self/cgroup per hierarchy in use names the job's cgroup.
	want := []string{strconv.Itoa(int(a.cred.UID)), strconv.Itoa(int(a.cred.GID)), "NoNewPrivs:\t1", strconv.Itoa(len(a.cg.folders()))}
	if got := c.all(""); !e.Success() || !slices.Equal(got, want) {
		t.Fatalf("exit %s, output %q, want %q", e, got, want)
	}
	info, err := os.Stat(filepath.Join(base, "job-a"))
	if err != nil || info.Sys().(*syscall.Stat_t).Uid != a.cred.UID || info.Mode().Perm() != 0o700 {
		t.Fatalf("job folder %v %v: want 0700 owned by %d", info.Mode(), err, a.cred.UID)
	}
	uid := a.cred.UID
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(r.cfg.UIDLockDir, strconv.Itoa(int(uid)))); !os.IsNotExist(err) {
		t.Fatalf("lock file of uid %d still there after Close: %v", uid, err)
	}
	f, err := r.users.lock(uid)
	if err != nil {
		t.Fatalf("uid %d still held after Close: %v", uid, err)
	}
	if err := r.users.release(f); err != nil {
		t.Fatal(err)
	}
}

// A job cannot read the agent's key, its data dir, or another job's
// folder: the kernel refuses.
func TestSandboxRefusesAgentAndOtherJobFiles(t *testing.T) {
	r := sandboxRunner(t)
	base := reachableBase(t)
	data := filepath.Join(base, "data") // as the agent's data dir: 0700, root's
	if err := os.Mkdir(data, 0o700); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(data, "identity.key")
	if err := os.WriteFile(key, []byte("secret key"), 0o600); err != nil {
		t.Fatal(err)
	}
	owner := newSandbox(t, r, "job-owner", Resources{})
	if e, c := runIn(t, r, owner, base, "job-owner", `echo mine > file && cat file`); !e.Success() || !slices.Equal(c.all(""), []string{"mine"}) {
		t.Fatalf("owner job: exit %s, output %q", e, c.all(""))
	}
	thief := newSandbox(t, r, "job-thief", Resources{})
	for _, target := range []string{key, data, filepath.Join(base, "job-owner", "file"), filepath.Join(base, "job-owner")} {
		cmd := "cat " + target
		if info, err := os.Stat(target); err == nil && info.IsDir() {
			cmd = "ls " + target
		}
		e, c := runIn(t, r, thief, base, "job-thief", cmd)
		out := strings.Join(c.all(""), "\n")
		if e.Success() || !strings.Contains(out, "Permission denied") || strings.Contains(out, "secret") || strings.Contains(out, "mine") {
			t.Fatalf("%s: exit %s, output %q: want a refusal", cmd, e, out)
		}
	}
}

// A job that allocates past its memory limit is ended by the OOM killer
// and its Exit says so; another job running meanwhile and the agent go on.
func TestSandboxMemoryLimit(t *testing.T) {
	r := sandboxRunner(t)
	base := reachableBase(t)
	hog := newSandbox(t, r, "job-hog", Resources{MemoryBytes: 32 << 20, Pids: 64})
	other := newSandbox(t, r, "job-other", Resources{MemoryBytes: 64 << 20})
	oc := newCollector()
	spec := Spec{Job: "job-other", Size: 1, Dir: filepath.Join(base, "job-other"), Program: "/bin/sh",
		Args: []string{"-c", `echo started; while [ ! -e ../go-on ]; do sleep 0.01; done; echo fine`}, Sandbox: other}
	op, err := r.Start(context.Background(), spec, oc.out)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = op.Kill(); <-op.Done() })
	oc.waitFor(t, "started")
	// The shell keeps the output of the command substitution: 256 MiB.
	e, _ := runIn(t, r, hog, base, "job-hog", `x=$(head -c 268435456 /dev/zero | tr '\000' a); echo survived`)
	if e.Success() || !e.OutOfMemory || !strings.Contains(e.String(), "out of memory") {
		t.Fatalf("exit %s (%+v): want ended for exceeding its memory", e, e)
	}
	if ev := hog.Events(); ev.OOMKills == 0 {
		t.Fatalf("events %+v: want an OOM kill", ev)
	}
	if err := writeGoOn(base); err != nil {
		t.Fatal(err)
	}
	if e := wait(t, op); !e.Success() || e.OutOfMemory || !slices.Equal(oc.all(""), []string{"started", "fine"}) {
		t.Fatalf("other job: exit %s, output %q", e, oc.all(""))
	}
}

// writeGoOn makes the file base/go-on, which jobs of a test wait for.
func writeGoOn(base string) error {
	return os.WriteFile(filepath.Join(base, "go-on"), nil, 0o644)
}

// A job that forks past its process limit sees the forks fail, and its
// Exit says so.
func TestSandboxPidsLimit(t *testing.T) {
	r := sandboxRunner(t)
	base := reachableBase(t)
	b := newSandbox(t, r, "job-forks", Resources{Pids: 8})
	e, c := runIn(t, r, b, base, "job-forks",
		`i=0; while [ $i -lt 32 ]; do sleep 30 & i=$((i+1)); done; echo all-forked`)
	if slices.Contains(c.all(""), "all-forked") || e.Success() || !e.PidsLimit || !strings.Contains(e.String(), "process limit") {
		t.Fatalf("exit %s (%+v), output %q: want forks refused", e, e, c.all(""))
	}
	if ev := b.Events(); ev.PidsLimit == 0 {
		t.Fatalf("events %+v: want refused forks", ev)
	}
}

// The wall-clock limit still ends a sandboxed job.
func TestSandboxWallClock(t *testing.T) {
	r := sandboxRunner(t)
	base := reachableBase(t)
	b := newSandbox(t, r, "job-slow", Resources{})
	s := Spec{Job: "job-slow", Size: 1, Dir: filepath.Join(base, "job-slow"), Program: "/bin/sh",
		Args: []string{"-c", "sleep 60"}, Sandbox: b, Timeout: 300 * time.Millisecond}
	p, err := r.Start(context.Background(), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if e := wait(t, p); !e.TimedOut || e.Success() {
		t.Fatalf("exit %s: want timed out", e)
	}
}

// Close ends a process that left its process group: it is still in the
// cgroup and runs as the job's user.
func TestSandboxCloseEndsEscapee(t *testing.T) {
	r := sandboxRunner(t)
	base := reachableBase(t)
	b := newSandbox(t, r, "job-escape", Resources{})
	c := newCollector()
	s := Spec{Job: "job-escape", Size: 1, Dir: filepath.Join(base, "job-escape"), Program: "/bin/sh",
		Args: []string{"-c", `setsid sh -c 'echo $$ > escapee; exec sleep 60' </dev/null >/dev/null 2>&1 &
while [ ! -s escapee ]; do sleep 0.01; done; echo escaped; sleep 60`}, Sandbox: b}
	p, err := r.Start(context.Background(), s, c.out)
	if err != nil {
		t.Fatal(err)
	}
	c.waitFor(t, "escaped")
	_ = p.Kill()
	wait(t, p)
	uid := b.cred.UID
	if busy, _ := uidInUse(uid); !busy {
		t.Fatalf("the escaped sleep is not running as uid %d", uid)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	// Killed, the escapee takes a moment to become a zombie.
	for deadline := time.Now().Add(waitLimit); ; time.Sleep(10 * time.Millisecond) {
		if busy, _ := uidInUse(uid); !busy {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes still run as uid %d %v after Close", uid, waitLimit)
		}
	}
	// With no sandbox left, the runner's folder of cgroups goes too.
	for _, d := range append(b.cg.folders(), r.cgroups.dirs()...) {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Fatalf("cgroup %s still there after Close: %v", d, err)
		}
	}
}

// With network isolation a job sees only loopback, up, and cannot reach a
// TCP port open on the host's loopback.
func TestSandboxNetwork(t *testing.T) {
	r := sandboxRunner(t)
	if !r.netns {
		t.Skipf("no network namespaces here: %s", r.iso.Network)
	}
	if _, err := os.Stat("/bin/bash"); err != nil {
		t.Skip("needs /bin/bash for /dev/tcp")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- struct{}{}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	base := reachableBase(t)
	b := newSandbox(t, r, "job-net", Resources{})
	script := fmt.Sprintf(`tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '
if (exec 3<>/dev/tcp/127.0.0.1/%d) 2>/dev/null; then echo connected; else echo refused; fi`, port)
	c := newCollector()
	s := Spec{Job: "job-net", Size: 1, Dir: filepath.Join(base, "job-net"), Program: "/bin/bash",
		Args: []string{"-c", script}, Sandbox: b}
	p, err := r.Start(context.Background(), s, c.out)
	if err != nil {
		t.Fatal(err)
	}
	e := wait(t, p)
	// "refused", not "unreachable": loopback is up, with nothing listening.
	if got := c.all(""); !e.Success() || !slices.Equal(got, []string{"lo", "refused"}) {
		t.Fatalf("exit %s, output %q: want only lo, and the host's port out of reach", e, got)
	}
	select {
	case <-accepted:
		t.Fatal("the job reached the host's listener")
	default:
	}
}

func TestCgroupMounts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mountinfo")
	info := "36 25 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n" +
		"37 25 0:32 /docker/x /sys/fs/cgroup/cpu\\040acct rw - cgroup cgroup rw,cpu,cpuacct\n" +
		"38 25 0:33 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n" +
		"39 25 0:34 / /proc rw - proc proc rw\n"
	if err := os.WriteFile(path, []byte(info), 0o600); err != nil {
		t.Fatal(err)
	}
	mounts, err := readMounts(path)
	if err != nil || len(mounts) != 3 {
		t.Fatalf("mounts %+v, %v: want 3", mounts, err)
	}
	if m := mounts[1]; m.point != "/sys/fs/cgroup/cpu acct" || m.root != "/docker/x" || !slices.Contains(m.options, "cpuacct") || m.v2 {
		t.Fatalf("second mount %+v", m)
	}
	if !mounts[2].v2 {
		t.Fatalf("third mount %+v: want cgroup2", mounts[2])
	}
	if d, err := ownDir(mounts[1], "/docker/x/sub"); err != nil || d != "/sys/fs/cgroup/cpu acct/sub" {
		t.Fatalf("ownDir = %q, %v", d, err)
	}
	if _, err := ownDir(mounts[1], "/other"); err == nil {
		t.Fatal("ownDir accepted a cgroup outside the mount")
	}
}

// A runner that starts where a killed agent's runner left cgroups (same
// CgroupName) kills their processes, frozen ones too, and removes them
// (the v2 freezer's cgroup with the others).
func TestNewRunnerSweepsLeftoverCgroups(t *testing.T) {
	r := sandboxRunner(t)
	base := reachableBase(t)
	b, err := r.NewSandbox("job-left", Resources{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	c := newCollector()
	s := Spec{Job: "job-left", Size: 1, Dir: filepath.Join(base, "job-left"), Program: "/bin/sh",
		Args: []string{"-c", "echo up; sleep 60"}, Sandbox: b}
	p, err := r.Start(context.Background(), s, c.out)
	if err != nil {
		t.Fatal(err)
	}
	c.waitFor(t, "up")
	if err := Freeze(b, []Process{p}); err != nil {
		t.Fatal(err)
	}
	again := NewRunner(r.cfg).(*osRunner) // as a restarted agent would
	if again.cgroups == nil {
		t.Fatalf("second runner: %s", again.iso.Cgroups)
	}
	if e := wait(t, p); e.Signal != "SIGKILL" || e.Killed {
		t.Fatalf("exit %s: want killed by the sweep", e)
	}
	for _, d := range b.cg.folders() {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Fatalf("leftover cgroup %s still there: %v", d, err)
		}
	}
}

// The limits reach the kernel's control files of the job's cgroup.
func TestSandboxLimitsWritten(t *testing.T) {
	r := sandboxRunner(t)
	b := newSandbox(t, r, "job-limits", Resources{MemoryBytes: 64 << 20, Pids: 10, CPUs: 1.5})
	want := map[string]string{"memory.limit_in_bytes": "67108864", "pids.max": "10", "cpu.cfs_quota_us": "150000"}
	if r.cgroups.version == 2 {
		want = map[string]string{"memory.max": "67108864", "pids.max": "10", "cpu.max": "150000 100000"}
	}
	for file, v := range want {
		ctl := strings.SplitN(file, ".", 2)[0]
		dir, ok := b.cg.dirs[ctl]
		if !ok {
			t.Logf("controller %s not in use here", ctl)
			continue
		}
		got, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil || strings.TrimSpace(string(got)) != v {
			t.Errorf("%s = %q (%v), want %q", file, got, err, v)
		}
	}
}
