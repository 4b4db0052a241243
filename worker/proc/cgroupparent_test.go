//go:build linux

package proc

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// With CgroupParent, the sandboxes' cgroups are made below that cgroup,
// not below the agent's own, and a memory bound set on it binds the jobs
// (all of them together) while the agent stays where it was.
func TestSandboxUnderCgroupParent(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the sandbox needs the agent to run as root")
	}
	parent := fmt.Sprintf("/zorilla-test-parent-%d-%d", os.Getpid(), sandboxSeq.Add(1))
	dirs := makeParentCgroups(t, parent)
	const bound = 48 << 20
	memDir := dirs["memory"]
	if err := limitParent(memDir, bound); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile("/proc/self/cgroup")
	cfg := testConfig()
	cfg.Cgroups, cfg.CgroupParent, cfg.AutoUsers = true, parent, &DefaultUIDRange
	cfg.CgroupName = fmt.Sprintf("zorilla-test-%d-%d", os.Getpid(), sandboxSeq.Add(1))
	r := NewRunner(cfg).(*osRunner)
	if r.err != nil || r.cgroups == nil {
		t.Fatalf("runner: %v, cgroups %s", r.err, r.iso.Cgroups)
	}
	t.Cleanup(func() { _ = r.Close() })
	// 256 MiB of its own, 48 MiB under the parent: the parent's bound ends it.
	b := newSandbox(t, r, "job-under", Resources{MemoryBytes: 256 << 20, Pids: 64})
	for ctl, d := range b.cg.dirs {
		if want := filepath.Join(dirs[ctl], cfg.CgroupName); filepath.Dir(d) != want {
			t.Fatalf("%s cgroup %s, want one in %s", ctl, d, want)
		}
	}
	e, c := runIn(t, r, b, reachableBase(t), "job-under",
		`x=$(head -c 134217728 /dev/zero | tr '\000' a); echo survived`)
	if e.Success() || slices.Contains(c.all(""), "survived") {
		t.Fatalf("exit %s, output %q: the parent's bound of %d MiB did not hold", e, c.all(""), bound>>20)
	}
	if after, _ := os.ReadFile("/proc/self/cgroup"); string(after) != string(before) {
		t.Fatalf("the agent moved: %q, was %q", after, before)
	}
}

// makeParentCgroups makes the cgroup path in every hierarchy a sandbox
// uses (one for v2) and removes it at the end of the test; it returns
// controller -> folder.
func makeParentCgroups(t *testing.T, path string) map[string]string {
	t.Helper()
	mounts, err := readMounts("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	dirs := map[string]string{}
	for _, ctl := range cgroupControllers {
		for _, m := range mounts {
			if !m.v2 && slices.Contains(m.options, ctl) && m.root == "/" {
				dirs[ctl] = filepath.Join(m.point, path)
			}
		}
	}
	if len(dirs) == 0 {
		i := slices.IndexFunc(mounts, func(m mount) bool { return m.v2 && m.root == "/" })
		if i < 0 {
			t.Skip("no cgroup hierarchy mounted at its root here")
		}
		for _, ctl := range cgroupControllers {
			dirs[ctl] = filepath.Join(mounts[i].point, path)
		}
	}
	for _, d := range dirs {
		if err := os.Mkdir(d, 0o755); err != nil && !os.IsExist(err) {
			t.Skipf("cannot make cgroup %s: %v", d, err)
		}
		t.Cleanup(func() {
			if err := removeCgroup(d, 10*time.Second); err != nil {
				t.Errorf("remove %s: %v", d, err)
			}
		})
	}
	return dirs
}

// limitParent bounds the parent cgroup's memory (and swap, where v1
// accounts it apart) to bound bytes.
func limitParent(dir string, bound int64) error {
	v := fmt.Sprint(bound)
	if _, err := os.Stat(filepath.Join(dir, "memory.max")); err == nil {
		return writeFile(filepath.Join(dir, "memory.max"), v)
	}
	if err := writeFile(filepath.Join(dir, "memory.limit_in_bytes"), v); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, "memory.memsw.limit_in_bytes"), v); err != nil && !strings.Contains(err.Error(), "no such file") {
		return err
	}
	return nil
}
