package proc

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// MemoryCurrent is the memory the sandbox's cgroup charges its processes
// now (memory.current, or memory.usage_in_bytes on cgroup v1); false
// without a memory cgroup.
func (b *Sandbox) MemoryCurrent() (int64, bool) {
	if b == nil || b.cg == nil {
		return 0, false
	}
	d, ok := b.cg.dirs["memory"]
	if !ok {
		return 0, false
	}
	file := "memory.current"
	if b.cg.root.version == 1 {
		file = "memory.usage_in_bytes"
	}
	raw, err := os.ReadFile(filepath.Join(d, file))
	if err != nil {
		return 0, false
	}
	return parseCounter(raw)
}

// ResidentMemory sums VmRSS over the processes pids and their
// descendants (read from /proc, at most maxMemPids of them): what a job
// without a cgroup uses. Processes that ended meanwhile count as 0.
func ResidentMemory(pids []int) int64 {
	var sum int64
	seen := map[int]bool{}
	queue := append([]int(nil), pids...)
	for len(queue) > 0 && len(seen) < maxMemPids {
		pid := queue[0]
		queue = queue[1:]
		if pid <= 0 || seen[pid] {
			continue
		}
		seen[pid] = true
		if raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
			if rss, ok := ParseVmRSS(raw); ok {
				sum += rss
			}
		}
		queue = append(queue, children(pid)...)
	}
	return sum
}

// children lists pid's child processes (/proc/<pid>/task/*/children).
func children(pid int) []int {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var out []int
	for _, t := range tasks {
		raw, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(raw)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}
