//go:build linux

package proc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// cgroupControllers are the controllers a sandbox's cgroup uses.
var cgroupControllers = []string{"memory", "pids", "cpu"}

// cgroupRoot is where a runner makes its sandboxes' cgroups: one parent
// folder (below the agent's own cgroup) per hierarchy, one hierarchy for
// v2, one per controller for v1.
//
// The parent folders exist only while a sandbox does: an idle agent (or
// one of hundreds in a testnet) holds no cgroup, and one that dies idle
// leaves none behind.
type cgroupRoot struct {
	version   int               // 1 or 2
	parents   map[string]string // controller -> parent folder (v2: all the same)
	freezer   string            // parent folder of the v2 freezer cgroups (v2: the same); "" none
	noFreezer string            // why freezer is ""

	mu   sync.Mutex // guards live and the parents' existence
	live int        // job cgroups made and not yet removed
}

// acquire makes the parent folders if no job cgroup holds them yet.
func (c *cgroupRoot) acquire() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.live == 0 {
		for _, d := range c.dirs() {
			if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
				return err
			}
			if c.version == 2 {
				if err := writeFile(filepath.Join(d, "cgroup.subtree_control"), "+memory +pids +cpu"); err != nil {
					return err
				}
			}
		}
	}
	c.live++
	return nil
}

// release removes the parent folders when the last job cgroup is gone.
func (c *cgroupRoot) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.live--; c.live == 0 {
		c.dropParents()
	}
}

// dropParents removes the parent folders, if empty.
func (c *cgroupRoot) dropParents() {
	for _, d := range c.dirs() {
		if err := unix.Rmdir(d); err != nil && !errors.Is(err, unix.ENOENT) {
			log.Debugw("cgroup folder not removed", "dir", d, "err", err)
		}
	}
}

// controllers lists the controllers in use, in a stable order.
func (c *cgroupRoot) controllers() []string {
	var out []string
	for _, k := range cgroupControllers {
		if _, ok := c.parents[k]; ok {
			out = append(out, k)
		}
	}
	return out
}

// describe says what the root enforces, for Isolation.
func (c *cgroupRoot) describe() string {
	return fmt.Sprintf("v%d (%s)", c.version, strings.Join(c.controllers(), ", "))
}

// dirs are the distinct parent folders, the freezer's last.
func (c *cgroupRoot) dirs() []string {
	var out []string
	for _, k := range c.controllers() {
		if d := c.parents[k]; !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	if c.freezer != "" && !slices.Contains(out, c.freezer) {
		out = append(out, c.freezer)
	}
	return out
}

// openCgroups finds the hierarchy this agent can make cgroups in and makes
// the parent folder name below its own cgroup (below the cgroup under,
// when set). cgroup v2 is taken when it offers the controllers; v1
// otherwise, with the v2 freezer beside it when a cgroup2 hierarchy is
// mounted too (cgroupfreezer_linux.go).
func openCgroups(name, under string) (*cgroupRoot, error) {
	mounts, err := readMounts("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	own, err := readOwnCgroups("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	if under != "" {
		for k := range own {
			own[k] = under
		}
	}
	root, err2 := openV2(mounts, own, name, under != "")
	if err2 != nil {
		var err1 error
		if root, err1 = openV1(mounts, own, name); err1 != nil {
			return nil, errors.Join(fmt.Errorf("v2: %w", err2), fmt.Errorf("v1: %w", err1))
		}
	}
	parent, why := planFreezer(mounts, own, name)
	if parent != "" {
		parent, why = openFreezer(parent)
	}
	root.freezer, root.noFreezer = parent, why
	return root, nil
}

// openV2 makes the parent below the agent's own cgroup v2, or below the
// cgroup the owner gave (given), which the agent never moves itself into.
func openV2(mounts []mount, own map[string]string, name string, given bool) (*cgroupRoot, error) {
	dir, err := v2OwnDir(mounts, own, given)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return nil, err
	}
	have := strings.Fields(string(b))
	for _, c := range cgroupControllers {
		if !slices.Contains(have, c) {
			return nil, fmt.Errorf("controller %s is not available in %s (controllers: %q)", c, dir, have)
		}
	}
	if given {
		err = writeFile(filepath.Join(dir, "cgroup.subtree_control"), "+memory +pids +cpu")
	} else {
		err = enableV2(dir) // may move the agent to a leaf of its own cgroup
	}
	if err != nil {
		return nil, err
	}
	parent := filepath.Join(dir, name)
	if err := os.Mkdir(parent, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, err
	}
	if err := writeFile(filepath.Join(parent, "cgroup.subtree_control"), "+memory +pids +cpu"); err != nil {
		return nil, err
	}
	root := &cgroupRoot{version: 2, parents: map[string]string{}}
	for _, c := range cgroupControllers {
		root.parents[c] = parent
	}
	return root, nil
}

// agentLeaf is the child cgroup v2 the agent moves itself to.
const agentLeaf = "agent"

// enableV2 turns on the controllers for the children of the agent's own
// cgroup dir. cgroup v2 forbids that while dir holds processes (as the
// agent's own cgroup does): the agent then moves itself to a child of its
// own, as systemd asks of a delegated service.
func enableV2(dir string) error {
	ctl := filepath.Join(dir, "cgroup.subtree_control")
	err := writeFile(ctl, "+memory +pids +cpu")
	if !errors.Is(err, unix.EBUSY) {
		return err
	}
	leaf := filepath.Join(dir, agentLeaf)
	if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	if err := writeFile(filepath.Join(leaf, "cgroup.procs"), "0"); err != nil {
		return fmt.Errorf("move the agent to %s: %w", leaf, err)
	}
	return writeFile(ctl, "+memory +pids +cpu")
}

func openV1(mounts []mount, own map[string]string, name string) (*cgroupRoot, error) {
	root := &cgroupRoot{version: 1, parents: map[string]string{}}
	var errs []error
	for _, c := range cgroupControllers {
		i := slices.IndexFunc(mounts, func(m mount) bool { return !m.v2 && slices.Contains(m.options, c) })
		path, ok := own[c]
		if i < 0 || !ok {
			errs = append(errs, fmt.Errorf("%s: not mounted", c))
			continue
		}
		dir, err := ownDir(mounts[i], path)
		if err == nil {
			dir = filepath.Join(dir, name)
			err = os.Mkdir(dir, 0o755)
		}
		if err != nil && !errors.Is(err, os.ErrExist) {
			errs = append(errs, fmt.Errorf("%s: %w", c, err))
			continue
		}
		root.parents[c] = dir
	}
	if _, ok := root.parents["memory"]; !ok {
		return nil, errors.Join(errs...) // memory is the limit that matters most
	}
	return root, nil
}

// writeFile writes s to an existing control file.
func writeFile(path, s string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(s)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// jobCgroup is the cgroup of one sandbox: one folder per hierarchy.
type jobCgroup struct {
	root    *cgroupRoot
	dirs    map[string]string // controller -> folder
	freezer string            // the folder with cgroup.freeze (v2: the same); "" none
}

// newJobCgroup makes the cgroup name with res as its limits.
func (c *cgroupRoot) newJobCgroup(name string, res Resources) (*jobCgroup, error) {
	if err := c.acquire(); err != nil {
		return nil, fmt.Errorf("make cgroup: %w", err)
	}
	j := &jobCgroup{root: c, dirs: map[string]string{}}
	for _, k := range c.controllers() {
		j.dirs[k] = filepath.Join(c.parents[k], name)
	}
	if c.freezer != "" {
		j.freezer = filepath.Join(c.freezer, name)
	}
	for _, d := range j.folders() {
		if err := os.Mkdir(d, 0o755); err != nil {
			_ = j.remove(time.Second)
			return nil, fmt.Errorf("make cgroup: %w", err)
		}
	}
	if err := j.limit(res); err != nil {
		_ = j.remove(time.Second)
		return nil, fmt.Errorf("cgroup %s: %w", name, err)
	}
	return j, nil
}

// folders are the distinct folders of the cgroup, the freezer's last.
func (j *jobCgroup) folders() []string {
	var out []string
	for _, k := range j.root.controllers() {
		if d := j.dirs[k]; !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	if j.freezer != "" && !slices.Contains(out, j.freezer) {
		out = append(out, j.freezer)
	}
	return out
}

// limit writes res into the cgroup's control files.
func (j *jobCgroup) limit(res Resources) error {
	for _, w := range cgroupWrites(j.root.version, res) {
		dir, ok := j.dirs[w.controller]
		if !ok {
			continue
		}
		err := writeFile(filepath.Join(dir, w.file), w.value)
		if err != nil && !(w.optional && errors.Is(err, os.ErrNotExist)) {
			return fmt.Errorf("set %s to %s: %w", w.file, w.value, err)
		}
	}
	return nil
}

// procsFiles opens cgroup.procs of every folder for writing, for the shim
// to join (it writes "0", itself).
func (j *jobCgroup) procsFiles() ([]*os.File, error) {
	var out []*os.File
	for _, d := range j.folders() {
		f, err := os.OpenFile(filepath.Join(d, "cgroup.procs"), os.O_WRONLY, 0)
		if err != nil {
			for _, g := range out {
				_ = g.Close()
			}
			return nil, fmt.Errorf("open cgroup: %w", err)
		}
		out = append(out, f)
	}
	return out, nil
}

// events reads the OOM kills and refused forks of the cgroup.
func (j *jobCgroup) events() Events {
	var e Events
	if d, ok := j.dirs["memory"]; ok {
		file := "memory.events"
		if j.root.version == 1 {
			file = "memory.oom_control"
		}
		e.OOMKills = readCounter(filepath.Join(d, file), "oom_kill")
	}
	if d, ok := j.dirs["pids"]; ok {
		e.PidsLimit = readCounter(filepath.Join(d, "pids.events"), "max")
	}
	return e
}

// readCounter reads "key N" from a flat-keyed control file; 0 if absent.
func readCounter(path, key string) uint64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == key {
			n, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// remove kills every process in the cgroup and removes its folders,
// trying until timeout.
func (j *jobCgroup) remove(timeout time.Duration) error {
	var errs []error
	for _, d := range j.folders() {
		errs = append(errs, removeCgroup(d, timeout))
	}
	j.root.release()
	return errors.Join(errs...)
}

// removeCgroup kills the processes in cgroup folder dir (its children
// first) and removes it. A folder already gone is not an error.
func removeCgroup(dir string, timeout time.Duration) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	for _, e := range entries {
		if e.IsDir() {
			_ = removeCgroup(filepath.Join(dir, e.Name()), timeout)
		}
	}
	deadline := time.Now().Add(timeout)
	backoff := time.Millisecond
	for {
		killCgroup(dir)
		err := unix.Rmdir(dir)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			return fmt.Errorf("remove cgroup %s: %w", dir, err)
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, 50*time.Millisecond)
	}
}

// killCgroup sends SIGKILL to every process in cgroup folder dir:
// through cgroup.kill where the kernel has it (v2, Linux 5.14), else one by
// one from cgroup.procs.
func killCgroup(dir string) {
	if writeFile(filepath.Join(dir, "cgroup.kill"), "1") == nil {
		return
	}
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return
	}
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
	}
}

// sweep removes the cgroups an earlier life of the agent left, killing
// their processes; it returns how many it removed.
func (c *cgroupRoot) sweep() (int, error) {
	var errs []error
	n := 0
	for _, parent := range c.dirs() {
		entries, err := os.ReadDir(parent)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			if err := removeCgroup(filepath.Join(parent, e.Name()), 10*time.Second); err != nil {
				errs = append(errs, err)
				continue
			}
			n++
		}
	}
	return n, errors.Join(errs...)
}
