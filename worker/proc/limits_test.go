package proc

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// procLimits parses /proc/<pid>/limits lines into name -> [soft, hard].
func procLimits(lines []string) map[string][2]string {
	out := map[string][2]string{}
	for _, l := range lines {
		f := strings.Fields(l)
		// "Max open files   64   64   files": name, soft, hard, unit.
		for i := len(f) - 1; i >= 2; i-- {
			if _, err := strconv.ParseUint(f[i-1], 10, 64); err == nil || f[i-1] == "unlimited" {
				out[strings.Join(f[:i-2], " ")] = [2]string{f[i-2], f[i-1]}
				break
			}
		}
	}
	return out
}

func TestLimitsVisibleInProc(t *testing.T) {
	t.Parallel()
	c := newCollector()
	s := shSpec(t, "cat /proc/self/limits")
	s.Limits = Limits{CPUSeconds: 30, MemoryBytes: 1 << 30, OpenFiles: 64, Processes: 500, FileBytes: 1 << 20}
	if e := wait(t, start(t, testConfig(), s, c)); !e.Success() {
		t.Fatalf("exit %s: %v", e, e.Tail)
	}
	got := procLimits(c.all(Stdout))
	for name, want := range map[string][2]string{
		"Max cpu time":      {"30", "31"},
		"Max address space": {"1073741824", "1073741824"},
		"Max open files":    {"64", "64"},
		"Max processes":     {"500", "500"},
		"Max file size":     {"1048576", "1048576"},
		"Max resident set":  {"unlimited", "unlimited"}, // not touched
	} {
		if got[name] != want {
			t.Errorf("%s = %v, want %v (all: %v)", name, got[name], want, got)
		}
	}
}

func TestLimitNeverRaised(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("/proc/self/limits")
	if err != nil {
		t.Fatal(err)
	}
	own := procLimits(strings.Split(string(b), "\n"))["Max open files"]
	c := newCollector()
	s := shSpec(t, "cat /proc/self/limits")
	s.Limits = Limits{OpenFiles: 1 << 40}
	wait(t, start(t, testConfig(), s, c))
	got := procLimits(c.all(Stdout))["Max open files"]
	if got[1] != own[1] || got[0] != own[1] {
		t.Fatalf("open files %v, want both at the agent's hard limit %s", got, own[1])
	}
}

func TestFileSizeLimitEnforced(t *testing.T) {
	t.Parallel()
	c := newCollector()
	s := shSpec(t, "head -c 100000 /dev/zero > big; wc -c < big")
	s.Limits = Limits{FileBytes: 4096}
	wait(t, start(t, testConfig(), s, c))
	if got := c.all(Stdout); !slices.Contains(got, "4096") {
		t.Fatalf("output %q, want the file stopped at 4096 bytes", got)
	}
	if b, err := os.ReadFile(filepath.Join(s.Dir, "big")); err != nil || len(b) != 4096 {
		t.Fatalf("big is %d bytes (%v), want 4096", len(b), err)
	}
}

func TestCPULimitEnforced(t *testing.T) {
	t.Parallel()
	s := shSpec(t, "while :; do :; done")
	s.Limits = Limits{CPUSeconds: 1}
	s.Timeout = waitLimit // a guard: the CPU limit must end it long before
	begin := time.Now()
	e := wait(t, start(t, testConfig(), s, nil))
	if e.TimedOut || (e.Signal != "SIGXCPU" && e.Signal != "SIGKILL") {
		t.Fatalf("exit %+v after %v, want SIGXCPU or SIGKILL from the CPU limit", e, time.Since(begin))
	}
}

func TestOpenFilesLimitEnforced(t *testing.T) {
	t.Parallel()
	c := newCollector()
	// fds 0-2 are open; with a limit of 5, fds 3 and 4 open and 5 fails.
	s := shSpec(t, `exec 3</dev/null 4</dev/null && echo opened4; exec 5</dev/null && echo opened5`)
	s.Limits = Limits{OpenFiles: 5}
	wait(t, start(t, testConfig(), s, c))
	if got := c.all(Stdout); !slices.Contains(got, "opened4") || slices.Contains(got, "opened5") {
		t.Fatalf("output %q, want fd 4 to open and fd 5 to be refused", got)
	}
}
