//go:build linux

package proc

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// mount is a cgroup file system mounted on this machine.
type mount struct {
	point, root string   // where it is mounted, and which folder of the hierarchy is its top
	v2          bool     // cgroup2
	options     []string // v1: the controllers it holds
}

// readMounts parses /proc/self/mountinfo for cgroup file systems.
func readMounts(path string) ([]mount, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []mount
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "36 25 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory"
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 3 || (g[0] != "cgroup" && g[0] != "cgroup2") {
			continue
		}
		out = append(out, mount{point: unescapeMount(f[4]), root: unescapeMount(f[3]), v2: g[0] == "cgroup2",
			options: strings.Split(g[2], ",")})
	}
	return out, sc.Err()
}

// unescapeMount undoes mountinfo's octal escapes of space, tab, newline
// and backslash.
func unescapeMount(s string) string {
	r := strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`)
	return r.Replace(s)
}

// readOwnCgroups parses /proc/self/cgroup: controller (or "" for v2) ->
// path of this process's cgroup in that hierarchy.
func readOwnCgroups(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	own := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			own[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			own[c] = parts[2]
		}
	}
	return own, nil
}

// ownDir is the folder of this process's cgroup under mount m, given its
// path in the hierarchy.
func ownDir(m mount, path string) (string, error) {
	rel, err := filepath.Rel(m.root, path)
	if err != nil || strings.HasPrefix(rel, "..") {
		return "", fmt.Errorf("this process's cgroup %s is outside the mount of %s", path, m.point)
	}
	return filepath.Join(m.point, rel), nil
}
