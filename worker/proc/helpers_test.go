package proc

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// testConfig is DefaultConfig with short waits, for fast tests.
func testConfig() Config {
	c := DefaultConfig()
	c.KillGrace = 200 * time.Millisecond
	c.SettleTimeout = 3 * time.Second
	c.Cgroups = false // sandbox tests turn them on, each under a name of its own
	return c
}

// shSpec runs script with /bin/sh in a fresh job folder.
func shSpec(t *testing.T, script string) Spec {
	t.Helper()
	return Spec{
		Job: "job-1", Rank: 0, Size: 1,
		Dir:     filepath.Join(t.TempDir(), "job-1"),
		Program: "/bin/sh", Args: []string{"-c", script},
	}
}

// waitLimit bounds every wait of a test for a condition.
const waitLimit = 20 * time.Second

// collector is an OutputFunc that records lines and lets a test wait for one.
type collector struct {
	mu      sync.Mutex
	lines   []Line
	changed chan struct{} // closed and replaced on every line
}

func newCollector() *collector { return &collector{changed: make(chan struct{})} }

func (c *collector) out(stream string, line []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lines = append(c.lines, Line{Stream: stream, Text: string(line)})
	close(c.changed)
	c.changed = make(chan struct{})
}

// all returns the lines of stream, or of both streams for "".
func (c *collector) all(stream string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, l := range c.lines {
		if stream == "" || l.Stream == stream {
			out = append(out, l.Text)
		}
	}
	return out
}

// waitFor blocks until a line with text has arrived.
func (c *collector) waitFor(t testing.TB, text string) {
	t.Helper()
	deadline := time.After(waitLimit)
	for {
		c.mu.Lock()
		seen := slices.ContainsFunc(c.lines, func(l Line) bool { return l.Text == text })
		changed := c.changed
		c.mu.Unlock()
		if seen {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("no line %q within %v; got %q", text, waitLimit, c.all(""))
		}
	}
}

// start starts s on a runner of cfg and fails the test on error.
func start(t *testing.T, cfg Config, s Spec, c *collector) Process {
	t.Helper()
	var out OutputFunc
	if c != nil {
		out = c.out
	}
	p, err := NewRunner(cfg).Start(context.Background(), s, out)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = p.Kill(); <-p.Done() })
	return p
}

// wait waits for p with a deadline.
func wait(t *testing.T, p Process) Exit {
	t.Helper()
	select {
	case <-p.Done():
		return p.Wait()
	case <-time.After(waitLimit):
		t.Fatalf("process %d did not end within %v", p.Pid(), waitLimit)
		return Exit{}
	}
}

// assertGroupGone checks that no process of group pgid is left.
func assertGroupGone(t *testing.T, pgid int) {
	t.Helper()
	if err := unix.Kill(-pgid, 0); !errors.Is(err, unix.ESRCH) {
		t.Fatalf("process group %d: kill(-pgid, 0) = %v, want ESRCH", pgid, err)
	}
}

// field returns the value of KEY in lines of "KEY=value".
func field(lines []string, key string) (string, bool) {
	for _, l := range lines {
		if k, v, ok := strings.Cut(l, "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}
