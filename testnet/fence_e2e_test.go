package testnet

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/submitter"
	"github.com/zorilla-p2p/zorilla/node"
)

// TestCutOffHostFreezesBeforeItsRankRunsElsewhere: the host running the
// one rank of a job without replicas is cut off from its submitter (its
// connections close, none opens again). The submitter counts it lost at
// once and starts the rank on another host; the cut-off host, which
// cannot tell the cut from its submitter restarting, keeps the copy but
// freezes it at its fence, before the other copy starts: in the log both
// copies append to, no line of the first follows the second's start. Once
// the cut heals, the first host is refused and kills its copy; the job
// ends well in its second run.
func TestCutOffHostFreezesBeforeItsRankRunsElsewhere(t *testing.T) {
	if testing.Short() {
		t.Skip("4 agents, real processes, a host cut off")
	}
	ln := startLaunchNet(t, 4, 1, func(i int, cfg *node.Config) {
		// A real agent's fence: the fifth of it by which the restart
		// waits longer than the freeze is the margin under test, and a
		// loaded machine's timers fire hundreds of ms late.
		cfg.Services.Submitter.Fence = submitter.DefaultConfig().Fence
		cfg.Labels = nil
		if i > 0 {
			cfg.Labels = []string{poolLabel}
		}
	})
	dir := t.TempDir()
	gate, log := filepath.Join(dir, "gate"), filepath.Join(dir, "log")
	prog := uploadScript(t, ln.Nodes[0], "echo start $$ >>"+log+"; echo pid $$\n"+
		"while [ ! -e "+gate+" ]; do echo tick $$ >>"+log+"; sleep 0.02; done")
	d := job.NewDescription("prog.sh", nil, 1)
	d.Require.Labels, d.Retries, d.Deadline = []string{poolLabel}, 1, time.Minute
	w := submitJob(t, ln.Nodes[0], d, prog)
	w.awaitLines(t, pidLine, 1)
	pids := printedPids(t, w.updates())
	first := -1
	if cwd, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pids[0]), "cwd")); err == nil {
		for i, d := range ln.dirs {
			if strings.HasPrefix(cwd, d+"/") {
				first = i
			}
		}
	}
	if first < 1 {
		t.Fatalf("no pool agent runs the job (agent %d)\n%s", first, w.describe())
	}
	ln.cut(0, first)
	cutAt := time.Now()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var starts []string
	if err := ln.Await(ctx, "the rank started again on another host", func() bool {
		starts = linesOf(t, log, regexp.MustCompile(`^start (\d+)$`))
		return len(starts) >= 2
	}); err != nil {
		t.Fatalf("%v\n%s", err, w.describe())
	}
	restartAt := time.Now()
	// Let the second copy run a while: a first copy not frozen would
	// tick meanwhile.
	second := regexp.MustCompile(`^tick (` + starts[1] + `)$`)
	if err := ln.Await(ctx, "the second copy ticks", func() bool { return len(linesOf(t, log, second)) >= 20 }); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(readFile(t, log)), "\n")
	after := false
	for _, l := range lines {
		if l == "start "+starts[1] {
			after = true
		}
		if after && l == "tick "+starts[0] {
			t.Fatalf("the cut-off copy (pid %s) ran on after the rank started again (pid %s):\n%s", starts[0], starts[1], strings.Join(lines, "\n"))
		}
	}
	ln.heal(0, first)
	ln.awaitGone(t, pids[0])
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rec := w.wait(t)
	if rec.State != job.Done || rec.Restarts != 1 {
		t.Fatalf("job ended %s (%s) after %d restarts: want done after one\n%s", rec.State, rec.Reason, rec.Restarts, w.describe())
	}
	t.Logf("restarted %v after the cut", restartAt.Sub(cutAt).Round(time.Millisecond))
}

// linesOf are the first submatches of the lines of file path matching re.
func linesOf(t *testing.T, path string, re *regexp.Regexp) []string {
	t.Helper()
	var out []string
	for _, l := range strings.Split(readFile(t, path), "\n") {
		if m := re.FindStringSubmatch(l); m != nil {
			out = append(out, m[1])
		}
	}
	return out
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

// awaitGone waits until process pid has ended.
func (ln *launchNet) awaitGone(t *testing.T, pid int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := ln.Await(ctx, "the cut-off copy killed", func() bool {
		return syscall.Kill(pid, 0) == syscall.ESRCH
	}); err != nil {
		t.Fatal(err)
	}
}

// TestSubmitterBackContinuesFrozenRanks: the agent that submitted a job
// stops while the job runs on two other hosts; they cannot tell that from
// a cut, and freeze the job's processes at its fence. The agent starts
// again, re-attaches the job, answers its hosts: the processes continue
// where they were, and the job ends well in its one run.
func TestSubmitterBackContinuesFrozenRanks(t *testing.T) {
	if testing.Short() {
		t.Skip("3 agents, real processes, the submitter restarted")
	}
	ln := startLaunchNet(t, 3, 1, func(i int, cfg *node.Config) {
		cfg.Labels = nil
		if i > 0 {
			cfg.Labels = []string{poolLabel}
		}
	})
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	prog := uploadScript(t, ln.Nodes[0], "echo pid $$; while [ ! -e "+gate+" ]; do sleep 0.02; done; echo through")
	d := job.NewDescription("prog.sh", nil, 2)
	d.Strategy, d.Require.Labels = job.Spread, []string{poolLabel}
	w := submitJob(t, ln.Nodes[0], d, prog)
	w.awaitLines(t, pidLine, 2)
	pids := printedPids(t, w.updates())
	id := w.id
	if err := ln.Stop(0); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := ln.Await(ctx, "both copies frozen at the fence", func() bool { return frozen(pids[0]) && frozen(pids[1]) }); err != nil {
		t.Fatal(err)
	}
	if err := ln.Restart(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if err := ln.Await(ctx, "both copies continued", func() bool { return !frozen(pids[0]) && !frozen(pids[1]) }); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var rec job.Record
	if err := ln.Await(ctx, "the re-attached job's end", func() bool {
		rec, _ = ln.Nodes[0].Submitter().Get(id)
		return rec.State.Terminal()
	}); err != nil {
		t.Fatalf("%v: job %s (%s)", err, rec.State, rec.Reason)
	}
	if rec.State != job.Done || rec.Attempts != 1 {
		t.Fatalf("job ended %s (%s) after %d attempts: want done in its one run", rec.State, rec.Reason, rec.Attempts)
	}
}

// frozen says whether process pid is stopped in place: by SIGSTOP, or by
// its cgroup's freezer (v2, or v1 beside it).
func frozen(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	if s := string(b); strings.Contains(s[strings.LastIndexByte(s, ')')+1:], " T ") {
		return true
	}
	cg, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cgroup"))
	if err != nil {
		return false
	}
	for _, l := range strings.Split(strings.TrimSpace(string(cg)), "\n") {
		parts := strings.SplitN(l, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			for _, root := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
				if ev, err := os.ReadFile(filepath.Join(root, parts[2], "cgroup.events")); err == nil && strings.Contains(string(ev), "frozen 1") {
					return true
				}
			}
		case parts[1] == "freezer":
			if st, err := os.ReadFile(filepath.Join("/sys/fs/cgroup/freezer", parts[2], "freezer.state")); err == nil && strings.TrimSpace(string(st)) == "FROZEN" {
				return true
			}
		}
	}
	return false
}
