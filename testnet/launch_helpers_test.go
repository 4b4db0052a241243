package testnet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/job/submitter"
	"github.com/zorilla-p2p/zorilla/node"
)

// poolLabel marks the agents other than 0, 1 and 2, so a job submitted
// through those can require to run only on agents that must fetch its
// program.
const poolLabel = "pool"

// launchNet is a loopback testnet of agents that each keep a data dir, so
// their job folders (<data dir>/work/<job>) can be checked and the
// submitter's records survive a restart.
type launchNet struct {
	*Net
	dirs []string
	cuts *cuts
}

// startLaunchNet starts n agents offering procs process slots each, with
// fast submitter timeouts and a one-second kill grace, and waits until
// every agent has neighbours. configure, if set, adjusts agent i further.
func startLaunchNet(t testing.TB, n, procs int, configure func(i int, cfg *node.Config)) *launchNet {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	ln := &launchNet{cuts: newCuts()}
	for range n {
		ln.dirs = append(ln.dirs, shortTempDir(t))
	}
	net, err := Loopback(ctx, n, Options{Seed: 4, NodeOptions: ln.cuts.options, Configure: func(i int, cfg *node.Config) {
		cfg.DataDir = ln.dirs[i]
		cfg.Cores, cfg.MaxProcs, cfg.MaxJobs = procs, procs, 4
		cfg.Services.Submitter = launchSubmitter()
		cfg.Services.Flood.Rate, cfg.Services.Flood.Burst = 1000, 1000
		cfg.Services.Proc.KillGrace = time.Second
		// The jobs of these tests share files with the test (gates, marks,
		// the record of runs) in its 0700 temporary folders: they run as the
		// agent's user. The sandbox has its own tests (worker/proc, node,
		// cmd/zorilla).
		cfg.RunAs = node.RunAsNone
		if i > 2 {
			cfg.Labels = []string{poolLabel}
		}
		if configure != nil {
			configure(i, cfg)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	ln.Net = net
	t.Cleanup(func() { _ = net.Close() })
	if err := ln.awaitNeighbours(ctx); err != nil {
		t.Fatal(err)
	}
	return ln
}

// launchSubmitter is FastSubmitter's twin for these tests: short waits, so
// a failed start is retried in seconds, and floods of radius at most 4
// (1.5 s in all), which reach every one of 16 agents that have 8
// neighbours each: a spread job wanting more hosts than the network has is
// placed once the flood has run out. A fence of 3 s (heartbeats 1.5 s
// apart) starts a lost host's ranks elsewhere after 3.6 s, not 6.
func launchSubmitter() submitter.Config {
	c := submitter.DefaultConfig()
	c.Schedule.First = 100 * time.Millisecond
	c.Schedule.MaxRadius = 4
	c.OfferGrace = 200 * time.Millisecond
	c.StartTimeout = 30 * time.Second
	c.InitTimeout = 30 * time.Second
	c.LostAfter = 5 * time.Second
	c.Fence = 3 * time.Second
	c.Retry.Backoff = 200 * time.Millisecond
	return c
}

// shortTempDir is a test folder with a short path: an agent's unix
// sockets live in its data dir, and socket paths are limited to 108 bytes.
func shortTempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "zl-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func (ln *launchNet) awaitNeighbours(ctx context.Context) error {
	want := min(len(ln.Nodes)-1, 2)
	return ln.Await(ctx, "every live agent has neighbours and knows every other", func() bool {
		live := map[peer.ID]bool{}
		for i, nd := range ln.Nodes {
			if ln.Live(i) {
				live[nd.Host().ID()] = true
			}
		}
		for i, nd := range ln.Nodes {
			if ln.Live(i) && (len(nd.Overlay().Neighbours()) < want || !knowsAll(nd, live)) {
				return false
			}
		}
		return true
	})
}

// knowsAll reports whether nd's overlay knows every agent of live but
// itself. A submitter that knows an agent which has not answered its
// flood yet waits for it longer (lifecycle.Config.QuietUnheard): on a
// loaded machine one that a fresh agent did not know yet answered after
// the flood was judged over, and a job that fitted failed.
func knowsAll(nd *node.Node, live map[peer.ID]bool) bool {
	known := 0
	for _, pi := range nd.Overlay().Peers() {
		if live[pi.ID] && pi.ID != nd.Host().ID() && !pi.Dead {
			known++
		}
	}
	return known >= len(live)-1
}

// jobDir is where agent i runs job id's processes.
func (ln *launchNet) jobDir(i int, id job.ID) string {
	return filepath.Join(node.JobsDirOf(ln.dirs[i], os.Geteuid() == 0), string(id))
}

// awaitClean waits until every pid is gone (kill(pid, 0) gives ESRCH) and
// no agent holds a folder or a lease for job id.
func (ln *launchNet) awaitClean(t *testing.T, id job.ID, pids []int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var left string
	err := ln.Await(ctx, "no process and no job folder left", func() bool {
		left = ln.leftovers(id, pids)
		return left == ""
	})
	if err != nil {
		t.Fatalf("%v: %s", err, left)
	}
}

// leftovers describes what job id left behind, or is "".
func (ln *launchNet) leftovers(id job.ID, pids []int) string {
	var out []string
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			out = append(out, fmt.Sprintf("pid %d alive (kill: %v)", pid, err))
		}
	}
	for i, nd := range ln.Nodes {
		if _, err := os.Stat(ln.jobDir(i, id)); !errors.Is(err, os.ErrNotExist) {
			out = append(out, fmt.Sprintf("agent %d still has %s", i, ln.jobDir(i, id)))
		}
		if l, held := nd.Leases().ByJob(id); ln.Live(i) && held {
			out = append(out, fmt.Sprintf("agent %d still holds lease %+v", i, l))
		}
	}
	return strings.Join(out, "; ")
}

// uploadScript writes an executable shell script and adds it to agent
// nd's blob store, as `zorilla submit` uploads a program.
func uploadScript(t testing.TB, nd *node.Node, body string) proto.FileRef {
	t.Helper()
	path := filepath.Join(t.TempDir(), "prog.sh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	h, size, err := nd.Blobs().PutFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return proto.FileRef{Name: "prog.sh", Hash: h.String(), Size: size}
}

// watcher collects a job's updates in the background until its end.
type watcher struct {
	nd   *node.Node
	id   job.ID
	mu   sync.Mutex
	ups  []job.Update
	done chan struct{}
	err  error
	end  job.Record
}

// submitJob submits d with prog through agent nd and starts watching it.
func submitJob(t testing.TB, nd *node.Node, d job.Description, prog proto.FileRef) *watcher {
	t.Helper()
	d.SetDefaults()
	id, err := nd.Submitter().Submit(submitter.Submission{Desc: d, Program: prog})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	return watchJob(nd, id)
}

// wait returns the job's final record, failing the test if the watch
// ended otherwise.
func (w *watcher) wait(t testing.TB) job.Record {
	t.Helper()
	<-w.done
	if w.err != nil || w.end.ID == "" {
		t.Fatalf("watch %s ended without the job's end: %v\n%s", w.id, w.err, w.describe())
	}
	return w.end
}

// describe tells where the job is, for a failure message.
func (w *watcher) describe() string {
	rec, err := w.nd.Submitter().Get(w.id)
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "job %s %s (%s), %d offers", rec.ID, rec.State, rec.Reason, len(rec.Offers))
	for _, e := range rec.History {
		fmt.Fprintf(&b, "\n  %s %s %s", e.At.Format("15:04:05.000"), e.State, e.Reason)
	}
	return b.String()
}

// updates is a copy of the updates so far.
func (w *watcher) updates() []job.Update {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]job.Update(nil), w.ups...)
}

// awaitLines waits until the job's output holds at least n lines matching
// re (or the job ends).
func (w *watcher) awaitLines(t *testing.T, re *regexp.Regexp, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		got := len(linesMatching(w.updates(), re))
		if got >= n {
			return
		}
		select {
		case <-w.done:
			t.Fatalf("job %s ended with %d of %d lines matching %s", w.id, got, n, re)
		case <-ctx.Done():
			t.Fatalf("job %s: %d of %d lines matching %s", w.id, got, n, re)
		case <-tick.C:
		}
	}
}

// awaitState waits until the job enters state st (or ends).
func (w *watcher) awaitState(t testing.TB, st job.State) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		for _, u := range w.updates() {
			if u.Kind == "state" && u.State == st {
				return
			}
		}
		select {
		case <-w.done:
			t.Fatalf("job %s ended %s (%s) before it was %s", w.id, w.end.State, w.end.Reason, st)
		case <-ctx.Done():
			t.Fatalf("job %s never %s", w.id, st)
		case <-tick.C:
		}
	}
}

// linesMatching returns the output updates whose line matches re, with the
// submatches of each.
func linesMatching(ups []job.Update, re *regexp.Regexp) []taggedLine {
	var out []taggedLine
	for _, u := range ups {
		if u.Kind != "output" {
			continue
		}
		if m := re.FindStringSubmatch(u.Line); m != nil {
			out = append(out, taggedLine{u: u, sub: m[1:]})
		}
	}
	return out
}

type taggedLine struct {
	u   job.Update
	sub []string
}

// pidLine is what the scripts print for each process they leave running.
var pidLine = regexp.MustCompile(`^pid (\d+)$`)

// printedPids reads the pids a job's processes printed.
func printedPids(t *testing.T, ups []job.Update) []int {
	t.Helper()
	var out []int
	for _, l := range linesMatching(ups, pidLine) {
		pid, err := strconv.Atoi(l.sub[0])
		if err != nil || pid <= 1 {
			t.Fatalf("bad pid line %q", l.u.Line)
		}
		out = append(out, pid)
	}
	sort.Ints(out)
	return out
}

// firstEntered returns when the record entered each state, first time only.
func firstEntered(rec job.Record) map[job.State]time.Time {
	at := map[job.State]time.Time{}
	for _, e := range rec.History {
		if _, seen := at[e.State]; !seen {
			at[e.State] = e.At
		}
	}
	return at
}

// watchJob follows a job already submitted until its end: the launch tests' own submissions and resumed jobs.
func watchJob(nd *node.Node, id job.ID) *watcher {
	w := &watcher{nd: nd, id: id, done: make(chan struct{})}
	// A ceiling for a job that never ends, not a speed check: in a loaded
	// CI run (the docker package's tests alongside), the first of
	// TestGangAlignedSlices' three jobs, running a third of the time, was
	// still running after 60 s; quiet, it ends within 40.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	go func() {
		defer close(w.done)
		defer cancel()
		w.err = nd.Submitter().Watch(ctx, id, 0, func(u job.Update) error {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.ups = append(w.ups, u)
			if u.Kind == "end" {
				w.end = *u.Record
			}
			return nil
		})
	}()
	return w
}
