package proc

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// KillLeftovers ends every process still working in a folder under dir
// (its current directory is there): what a previous life of the agent left
// behind when it was killed. Its direct children die with it
// (Pdeathsig), but a rank's own children in its process group can
// outlive it. It returns how many processes it sent SIGKILL. Only
// processes this agent's user may signal are touched; a folder that is
// not a clean absolute path is refused.
func KillLeftovers(dir string) (int, error) {
	if err := checkDir(dir); err != nil {
		return 0, fmt.Errorf("proc: leftovers: %w", err)
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, fmt.Errorf("proc: leftovers: %w", err)
	}
	self := os.Getpid()
	killed := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err != nil || !strings.HasPrefix(cwd, dir+string(filepath.Separator)) {
			continue
		}
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			killed++
		}
	}
	return killed, nil
}
