package worker

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSweepJobsDir: what a killed agent left in its jobs folder (a job
// folder, a rank's child still running in it) is gone once a new worker
// sweeps it; a folder with nothing in it stays as it is.
func TestSweepJobsDir(t *testing.T) {
	jobs := t.TempDir()
	left := filepath.Join(jobs, "oldjob")
	if err := os.MkdirAll(filepath.Join(left, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	// The shell prints its child's pid and exits; the child, as a rank's
	// own child outliving the agent would, keeps running in the folder.
	cmd := exec.Command("sh", "-c", `sleep 60 >/dev/null 2>&1 & echo $!`)
	cmd.Dir = left
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if gone(pid) {
		t.Fatalf("leftover %d not running before the sweep", pid)
	}
	sweepJobsDir(jobs)
	if _, err := os.Stat(left); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("job folder left: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !gone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("leftover process %d still running after the sweep", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := os.Stat(jobs); err != nil {
		t.Errorf("the jobs folder itself went: %v", err)
	}
	sweepJobsDir(filepath.Join(jobs, "absent")) // a first start: nothing to do
}

// gone reports whether pid has ended (no such process, or a zombie that
// its new parent has not reaped yet).
func gone(pid int) bool {
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return true
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadString('\n')
	_, after, _ := strings.Cut(line, ") ")
	return strings.HasPrefix(after, "Z")
}
