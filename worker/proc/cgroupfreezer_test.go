//go:build linux

package proc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The freezer's folder follows from the mounts and this process's own
// cgroups: v2 machines, hybrid ones (with or without systemd's service
// cgroups) and those without a usable cgroup2 hierarchy.
func TestPlanFreezer(t *testing.T) {
	const (
		v1 = "32 31 0:29 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n" +
			"33 31 0:30 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n"
		unified = "41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n"
		pureV2  = "30 23 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n"
		inCtr   = "30 23 0:26 /docker/abc /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"
		v1Own   = "4:memory:/\n2:pids:/\n"
	)
	tests := []struct {
		name, mountinfo, cgroup string
		parent, why             string // want: one of them is set
	}{
		{"hybrid, root cgroup", v1 + unified, v1Own + "0::/\n", "/sys/fs/cgroup/unified/zorilla-x", ""},
		{"hybrid, systemd service", v1 + unified, v1Own + "0::/system.slice/z.service\n",
			"/sys/fs/cgroup/unified/system.slice/z.service/zorilla-x", ""},
		{"v2", pureV2, "0::/user.slice/session-1.scope\n", "/sys/fs/cgroup/user.slice/session-1.scope/zorilla-x", ""},
		{"v2, agent moved to its leaf", pureV2, "0::/z.service/agent\n", "/sys/fs/cgroup/z.service/zorilla-x", ""},
		{"v2 in a container", inCtr, "0::/docker/abc/sub\n", "/sys/fs/cgroup/sub/zorilla-x", ""},
		{"v1 only", v1, v1Own, "", "not mounted"},
		{"cgroup2 mounted, process not in it", v1 + unified, v1Own, "", "not mounted"},
		{"own cgroup outside the mount", inCtr, "0::/other\n", "", "outside the mount"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			mi, cg := filepath.Join(dir, "mountinfo"), filepath.Join(dir, "cgroup")
			if err := os.WriteFile(mi, []byte(tt.mountinfo), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(cg, []byte(tt.cgroup), 0o600); err != nil {
				t.Fatal(err)
			}
			mounts, err := readMounts(mi)
			if err != nil {
				t.Fatal(err)
			}
			own, err := readOwnCgroups(cg)
			if err != nil {
				t.Fatal(err)
			}
			parent, why := planFreezer(mounts, own, "zorilla-x")
			if parent != tt.parent {
				t.Fatalf("parent %q (why %q), want %q", parent, why, tt.parent)
			}
			if tt.why != "" && !strings.Contains(why, tt.why) {
				t.Fatalf("why %q, want it to say %q", why, tt.why)
			}
			if tt.parent != "" && why != "" {
				t.Fatalf("why %q with a parent", why)
			}
		})
	}
}

// Isolation says which freezer stops a job.
func TestDescribeFreezer(t *testing.T) {
	tests := []struct {
		root *cgroupRoot
		want string
	}{
		{nil, "signals (SIGSTOP of each process group: no cgroups)"},
		{&cgroupRoot{version: 2, freezer: "/sys/fs/cgroup/z"}, "cgroup v2 (cgroup.freeze)"},
		{&cgroupRoot{version: 1, freezer: "/sys/fs/cgroup/unified/z"},
			"cgroup v2 (cgroup.freeze in /sys/fs/cgroup/unified, beside the v1 controllers)"},
		{&cgroupRoot{version: 1, noFreezer: "no cgroup2: not mounted"},
			"signals (SIGSTOP of each process group and of the v1 cgroup's processes): no cgroup2: not mounted"},
	}
	for _, tt := range tests {
		if got := describeFreezer(tt.root); got != tt.want {
			t.Errorf("describeFreezer(%+v) = %q, want %q", tt.root, got, tt.want)
		}
	}
}
