//go:build linux

package proc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"
)

// A job is frozen with the cgroup v2 freezer (cgroup.freeze) whenever the
// machine has a cgroup2 hierarchy the agent can write, even one with no
// controllers: every non-root cgroup v2 has cgroup.freeze. On a v2 machine
// that is the job's own cgroup. On a hybrid machine (v1 controllers, and
// a cgroup2 hierarchy without controllers, as systemd mounts it at
// /sys/fs/cgroup/unified) the job gets a second cgroup there that only
// freezes: the shim joins it with the v1 ones before exec, so every
// process the job forks is in it. Only without a writable cgroup2 does a
// freeze fall back to SIGSTOP.

// planFreezer picks the folder that holds a runner's freezer cgroups, one
// per job: name below this process's cgroup in the cgroup2 hierarchy (on a
// v2 machine, the folder of the controllers' cgroups too). It returns ""
// and why when there is no cgroup2 hierarchy to use.
func planFreezer(mounts []mount, own map[string]string, name string) (parent, why string) {
	dir, err := v2OwnDir(mounts, own, false)
	if err != nil {
		return "", "no cgroup2: " + err.Error()
	}
	return filepath.Join(dir, name), ""
}

// v2OwnDir is the folder of this process's cgroup in the cgroup2
// hierarchy; its parent when the process sits in the agentLeaf a runner
// moved it to, unless own names a cgroup the owner gave (given).
func v2OwnDir(mounts []mount, own map[string]string, given bool) (string, error) {
	i := slices.IndexFunc(mounts, func(m mount) bool { return m.v2 })
	path, ok := own[""]
	if i < 0 || !ok {
		return "", errors.New("not mounted")
	}
	dir, err := ownDir(mounts[i], path)
	if err != nil {
		return "", err
	}
	if filepath.Base(dir) == agentLeaf && !given {
		dir = filepath.Dir(dir) // an earlier runner of this process moved it there
	}
	return dir, nil
}

// openFreezer makes parent (from planFreezer) and checks that a cgroup
// there has cgroup.freeze (Linux 5.2). It returns parent, or "" and why
// not. The folder stays until dropParents, like the controllers' parents.
func openFreezer(parent string) (string, string) {
	err := os.Mkdir(parent, 0o755)
	if err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Sprintf("cannot make %s: %v", parent, err)
	}
	if _, serr := os.Stat(filepath.Join(parent, "cgroup.freeze")); serr != nil {
		if err == nil { // made here: nothing else will remove it
			_ = unix.Rmdir(parent)
		}
		return "", "no cgroup.freeze in " + parent + " (Linux before 5.2?)"
	}
	return parent, ""
}

// describeFreezer says how a runner's sandboxes are frozen, for Isolation.
func describeFreezer(c *cgroupRoot) string {
	switch {
	case c == nil:
		return "signals (SIGSTOP of each process group: no cgroups)"
	case c.freezer != "" && c.version == 2:
		return "cgroup v2 (cgroup.freeze)"
	case c.freezer != "":
		return "cgroup v2 (cgroup.freeze in " + filepath.Dir(c.freezer) + ", beside the v1 controllers)"
	}
	return "signals (SIGSTOP of each process group and of the v1 cgroup's processes): " + c.noFreezer
}
