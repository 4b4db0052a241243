package testnet

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/zorilla-p2p/zorilla/internal/blob"
	"github.com/zorilla-p2p/zorilla/internal/wire"
	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/job/submitter"
)

// The failure cases of TestLaunch16: what a failing rank, a cancel, a
// timeout, a corrupt program, a submitter crash and a host that dies at
// its commit leave behind.

// sleeper prints the pids of the shell and of a child it waits for, then
// sleeps, so a test can check that nothing of it survives the job.
const sleeper = `echo "pid $$"; sleep 60 & echo "pid $!"; wait`

// testFailingRank: one rank exits 3; the job fails naming it, with its
// status as the job's, its stderr tagged with its rank, and the other
// ranks are killed and cleaned up everywhere.
func testFailingRank(t *testing.T, ln *launchNet) {
	prog := uploadScript(t, ln.Nodes[0], `if [ "$ZORILLA_RANK" = 5 ]; then
  until [ -e "$GO" ]; do sleep 0.05; done
  echo "rank 5 gives up" >&2; exit 3
fi
`+sleeper)
	gate := filepath.Join(t.TempDir(), "go")
	d := job.NewDescription("prog.sh", nil, 12)
	d.Strategy, d.Env = job.Spread, map[string]string{"GO": gate}
	w := submitJob(t, ln.Nodes[0], d, prog)
	w.awaitLines(t, pidLine, 2*11) // every other rank runs
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	rec := w.wait(t)
	if rec.State != job.Failed || rec.Exit != 3 || !strings.Contains(rec.Reason, "rank 5") {
		t.Fatalf("job ended %s exit %d (%s), want failed with exit 3 naming rank 5", rec.State, rec.Exit, rec.Reason)
	}
	tagged := false
	for _, u := range w.updates() {
		if u.Kind == "output" && u.Line == "rank 5 gives up" {
			tagged = u.Rank == 5 && u.Stream == "stderr"
		}
	}
	if !tagged {
		t.Fatal("rank 5's stderr did not come back tagged with its rank")
	}
	ln.awaitClean(t, rec.ID, printedPids(t, w.updates()))
}

// testCancel: a cancel of a running job kills every process, its children
// too, and removes every job folder.
func testCancel(t *testing.T, ln *launchNet) {
	prog := uploadScript(t, ln.Nodes[0], sleeper)
	d := job.NewDescription("prog.sh", nil, 16)
	d.Strategy = job.Spread
	w := submitJob(t, ln.Nodes[0], d, prog)
	w.awaitLines(t, pidLine, 2*16)
	if err := ln.Nodes[0].Submitter().Cancel(w.id, "test cancels"); err != nil {
		t.Fatal(err)
	}
	rec := w.wait(t)
	if rec.State != job.Cancelled || !strings.Contains(rec.Reason, "test cancels") {
		t.Fatalf("job ended %s (%s), want cancelled", rec.State, rec.Reason)
	}
	ln.awaitClean(t, rec.ID, printedPids(t, w.updates()))
}

// testTimeout: a job past its wall-clock limit fails saying so, and leaves
// nothing behind.
func testTimeout(t *testing.T, ln *launchNet) {
	prog := uploadScript(t, ln.Nodes[0], sleeper)
	d := job.NewDescription("prog.sh", nil, 8)
	d.Timeout = 3 * time.Second
	w := submitJob(t, ln.Nodes[0], d, prog)
	rec := w.wait(t)
	if rec.State != job.Failed || !strings.Contains(rec.Reason, "wall-clock limit") {
		t.Fatalf("job ended %s (%s), want failed at its wall-clock limit", rec.State, rec.Reason)
	}
	at := firstEntered(rec)
	if ran := rec.Updated.Sub(at[job.Running]); ran < d.Timeout-time.Second {
		t.Fatalf("job ended %v after it ran, before its %v limit", ran, d.Timeout)
	}
	ps := printedPids(t, w.updates())
	if len(ps) != 2*8 {
		t.Fatalf("%d pids printed, want %d", len(ps), 2*8)
	}
	ln.awaitClean(t, rec.ID, ps)
}

// corruptProgram uploads to agent sub a script that would leave a mark in
// marks if it ever ran, then overwrites the stored copy with other bytes (a
// script leaving another mark), as a disk error would.
func corruptProgram(t *testing.T, ln *launchNet, sub int, marks string) (proto.FileRef, []byte) {
	t.Helper()
	prog := uploadScript(t, ln.Nodes[sub], `touch "$MARKS/ran-$ZORILLA_RANK"`)
	h, err := blob.ParseHash(prog.Hash)
	if err != nil {
		t.Fatal(err)
	}
	bad := []byte("#!/bin/sh\ntouch \"$MARKS/corrupt-$ZORILLA_RANK\"\n")
	path := ln.Nodes[sub].Blobs().Path(h)
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	return prog, bad
}

// testHashMismatch: a program whose bytes do not hash to the hash in the
// commit is refused, and neither it nor the bytes received ever run. First
// the submitter's stored copy is corrupted on disk (the submitter's own
// read check stops the transfer); then a submitter serves the corrupt
// bytes in full, and every worker refuses them itself. The second case
// replaces agent 1's fetch handler for good, so agent 1 submits it and no
// other job.
func testHashMismatch(t *testing.T, ln *launchNet) {
	t.Run("corrupt-on-disk", func(t *testing.T) {
		marks := t.TempDir()
		prog, _ := corruptProgram(t, ln, 0, marks)
		refused(t, ln, 0, prog, marks, "stage prog.sh")
	})
	t.Run("served-as-is", func(t *testing.T) {
		marks := t.TempDir()
		prog, bad := corruptProgram(t, ln, 1, marks)
		ln.Nodes[1].Host().SetStreamHandler(proto.FetchProtocol, func(s network.Stream) {
			var req proto.FetchRequest
			if err := wire.ReadJSON(bufio.NewReader(s), proto.MaxReplySize, &req); err != nil {
				_ = s.Reset()
				return
			}
			_ = wire.WriteJSON(s, proto.FetchReply{Size: int64(len(bad))})
			_, _ = s.Write(bad)
			_ = s.Close()
		})
		refused(t, ln, 1, prog, marks, "does not match its hash")
	})
}

// refused submits prog through agent sub to run on four pool agents and
// checks that the job fails saying why, that nothing ran, and that no
// worker kept the bytes or a job folder.
func refused(t *testing.T, ln *launchNet, sub int, prog proto.FileRef, marks, why string) {
	t.Helper()
	d := job.NewDescription("prog.sh", nil, 4)
	d.Strategy, d.Env = job.Spread, map[string]string{"MARKS": marks}
	d.Require.Labels = []string{poolLabel} // only agents that must fetch it
	w := submitJob(t, ln.Nodes[sub], d, prog)
	rec := w.wait(t)
	if rec.State != job.Failed || !strings.Contains(rec.Reason, why) {
		t.Fatalf("job ended %s (%s), want failed with %q", rec.State, rec.Reason, why)
	}
	if ran, _ := os.ReadDir(marks); len(ran) > 0 {
		t.Fatalf("the program ran: %v", ran)
	}
	h, _ := blob.ParseHash(prog.Hash)
	for i, nd := range ln.Nodes[2:] {
		if nd.Blobs().Has(h) {
			t.Fatalf("agent %d stored bytes that do not hash to %s", i+2, h)
		}
	}
	ln.awaitClean(t, rec.ID, nil)
}

// silentVictim is the agent of TestLaunch16 with the most slots: a job
// preferring cores puts it first in rlist, so it is always in the first
// plan.
const silentVictim = 15

// patientSubmitter is the agent of TestLaunch16 that keeps collecting
// offers for a second once a job has enough, so that its plans have spares
// even on a loaded machine (offers beyond the plan come in only during that
// grace).
const patientSubmitter = 2

// testSilentHost: the host that offered first dies when its commit
// arrives, and never answers it. The start is retried once, on the same
// hosts and the spare next in rlist in its place; the job completes
// without matching again, and the record marks the dead host unavailable.
func testSilentHost(t *testing.T, ln *launchNet) {
	victim := ln.Nodes[silentVictim].ID()
	committed := make(chan struct{})
	var once sync.Once
	ln.Nodes[silentVictim].Host().SetStreamHandler(proto.LeaseProtocol, func(s network.Stream) {
		once.Do(func() { close(committed) })
		_, _ = io.Copy(io.Discard, s) // no answer: held until the host dies
		_ = s.Reset()
	})
	stopped := make(chan error, 1)
	go func() {
		<-committed
		stopped <- ln.Stop(silentVictim)
	}()
	// The processes wait for a gate that opens once the job runs, so the
	// first start's processes never get past it: a job runs once.
	prog := uploadScript(t, ln.Nodes[patientSubmitter], `until [ -e "$GO" ]; do sleep 0.05; done
echo "at $ZORILLA_RANK $ZORILLA_REPLICA $ZORILLA_AGENT"`)
	gate := filepath.Join(t.TempDir(), "go")
	d := job.NewDescription("prog.sh", nil, 8)
	d.Strategy, d.Prefer = job.Spread, job.PreferCores
	d.Require.Labels = []string{poolLabel}
	d.Env = map[string]string{"GO": gate}
	w := submitJob(t, ln.Nodes[patientSubmitter], d, prog)
	w.awaitState(t, job.Running)
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	rec := w.wait(t)
	select {
	case <-committed:
	default: // the stop waits for a commit that will not come
		t.Fatalf("the job ended %s without a commit to agent %d (rlist %v): it was not in the first plan",
			rec.State, silentVictim, rec.Offers)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("stop agent %d: %v", silentVictim, err)
	}
	if rec.State != job.Done {
		t.Fatalf("job ended %s: %s", rec.State, rec.Reason)
	}
	if len(rec.Offers) < 9 || rec.Offers[0].Peer != victim {
		t.Fatalf("rlist %v does not start with the victim %s and hold a spare", rec.Offers, victim)
	}
	if rec.Matches != 1 || rec.Attempts != 2 {
		t.Fatalf("%d matches, %d starts; want the second start of the first match to run", rec.Matches, rec.Attempts)
	}
	spare := rec.Offers[8].Peer // first beyond the first plan's slist
	if rec.Plan.Procs(victim) != nil || rec.Plan.Procs(spare) == nil {
		t.Fatalf("final plan %v: want the spare %s in place of %s", rec.Plan.Peers(), spare, victim)
	}
	if !slices.Contains(rec.Unavailable, victim) {
		t.Fatalf("unavailable %v, want %s among them", rec.Unavailable, victim)
	}
	if len(rec.Unavailable) > 1 { // a host too slow to keep its slots is left out too
		t.Logf("unavailable: %v (the victim is %s)", rec.Unavailable, victim)
	}
	checkProcesses(t, rec, w.updates())
}

// testSubmitterRestart: the submitter's agent stops while its job runs
// (its record says "running", as a crash leaves it). The workers keep the
// job's processes and their reports for their grace period; the ranks go
// on and finish meanwhile. The agent comes back, re-attaches, and the job
// ends done: every rank ran once, its output is in the job folder once and
// in order, and its output file came back.
func testSubmitterRestart(t *testing.T, ln *launchNet) {
	runs := filepath.Join(t.TempDir(), "runs")
	gate := filepath.Join(t.TempDir(), "go")
	prog := uploadScript(t, ln.Nodes[0], `echo "$ZORILLA_RANK" >> "$RUNS"
i=0
while [ $i -lt 40 ]; do
  echo "line $ZORILLA_RANK $i"
  i=$((i+1))
  if [ $i -eq 10 ]; then until [ -e "$GO" ]; do sleep 0.05; done; fi
done
echo "rank $ZORILLA_RANK" > result.txt`)
	d := job.NewDescription("prog.sh", nil, 8)
	d.Strategy, d.Env = job.Spread, map[string]string{"RUNS": runs, "GO": gate}
	d.Require.Labels = []string{poolLabel} // agent 0 runs no rank
	d.Outputs = []string{"result.txt"}
	w := submitJob(t, ln.Nodes[0], d, prog)
	w.awaitLines(t, outLine, 8*10)
	w.awaitState(t, job.Running) // output can come before the last host said it started
	if err := ln.Stop(0); err != nil {
		t.Fatal(err)
	}
	<-w.done
	if w.end.State != job.Running {
		t.Fatalf("the stopped agent left the job %s (%s), want it running", w.end.State, w.end.Reason)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil { // the ranks finish while the agent is away
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := ln.Restart(ctx, 0); err != nil {
		t.Fatal(err)
	}
	var rec *job.Record
	var notes []string
	if err := ln.Nodes[0].Submitter().Watch(ctx, w.id, 0, func(u job.Update) error {
		switch {
		case u.Kind == "end":
			rec = u.Record
		case u.Kind == "output" && u.Rank < 0:
			notes = append(notes, u.Line)
		}
		return nil
	}); err != nil || rec == nil {
		t.Fatalf("watch after the restart: %v", err)
	}
	if !slices.Contains(notes, "re-attached after this agent restarted: 8 of 8 hosts still run the job") {
		t.Errorf("notes after the restart: %q", notes)
	}
	if rec.State != job.Done || rec.Exit != 0 {
		t.Fatalf("after the restart the job ended %s (exit %d): %s", rec.State, rec.Exit, rec.Reason)
	}
	b, err := os.ReadFile(runs)
	if err != nil {
		t.Fatal(err)
	}
	ranks := strings.Fields(string(b))
	sort.Strings(ranks)
	if strings.Join(ranks, " ") != "0 1 2 3 4 5 6 7" {
		t.Fatalf("ranks run: %v, want each of 0..7 once", ranks)
	}
	folder := filepath.Join(ln.dirs[0], "jobs", string(w.id))
	checkEveryLineOnce(t, filepath.Join(folder, "stdout"), 8, 40)
	outs, err := filepath.Glob(filepath.Join(folder, "output", "result.txt*"))
	if err != nil || len(outs) != 8 {
		t.Fatalf("output files %v (%v), want one per rank", outs, err)
	}
	for _, o := range outs {
		if b, err := os.ReadFile(o); err != nil || !strings.HasPrefix(string(b), "rank ") || strings.Count(string(b), "rank") != 1 {
			t.Errorf("output file %s: %q (%v)", o, b, err)
		}
	}
	ln.awaitClean(t, w.id, nil)
}

// testRestartBeforeRelease stops the submitting agent while an MPI job
// runs but is not yet released (every host started its processes; one
// rank waits for a gate before mpi.Init, the others are in Init), then
// starts it again. The re-attached job is released once the last rank is
// in Init and ends done: a release lost with the agent must not leave the
// ranks waiting in Init for ever.
func testRestartBeforeRelease(t *testing.T, ln *launchNet) {
	gate := filepath.Join(t.TempDir(), "go")
	ring := buildExample(t, ln.Nodes[0], "ring")
	prog := uploadScript(t, ln.Nodes[0], `if [ "$ZORILLA_RANK" = 3 ]; then until [ -e "$GO" ]; do sleep 0.05; done; fi
chmod u+x ring && exec ./ring 5`)
	d := job.NewDescription("prog.sh", nil, 4)
	d.Strategy, d.Env = job.Spread, map[string]string{"GO": gate}
	d.Require.Labels = []string{poolLabel} // agent 0 runs no rank
	d.SetDefaults()
	id, err := ln.Nodes[0].Submitter().Submit(submitter.Submission{Desc: d, Program: prog, Inputs: []proto.FileRef{ring}})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	// Three hosts' Ready reports are in the journal: the fourth host's
	// rank waits at the gate.
	journal := filepath.Join(ln.dirs[0], "jobs", string(id), "reports.journal")
	awaitNet(t, ln.Net, "the job running, three hosts with every rank in Init", func() bool {
		b, _ := os.ReadFile(journal)
		rec, err := ln.Nodes[0].Submitter().Get(id)
		return err == nil && rec.State == job.Running && strings.Count(string(b), `"r":true`) == 3
	})
	if err := ln.Stop(0); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := ln.Restart(ctx, 0); err != nil {
		t.Fatal(err)
	}
	var rec *job.Record
	var lines []string
	if err := ln.Nodes[0].Submitter().Watch(ctx, id, 0, func(u job.Update) error {
		switch u.Kind {
		case "end":
			rec = u.Record
		case "output":
			lines = append(lines, u.Line)
		}
		return nil
	}); err != nil || rec == nil {
		t.Fatalf("watch after the restart: %v (output %q)", err, lines)
	}
	if rec.State != job.Done || rec.Exit != 0 {
		t.Fatalf("after the restart the job ended %s (exit %d): %s; output %q", rec.State, rec.Exit, rec.Reason, lines)
	}
	ln.awaitClean(t, id, nil)
}

// outLine is what testSubmitterRestart's ranks print.
var outLine = regexp.MustCompile(`^line (\d+) (\d+)$`)

// checkEveryLineOnce checks a job folder's stdout: for each of n ranks,
// lines 0..per-1 each once and in order.
func checkEveryLineOnce(t *testing.T, path string, n, per int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	next := make([]int, n)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var tag, rank, i int
		if _, err := fmt.Sscanf(sc.Text(), "[%d] line %d %d", &tag, &rank, &i); err != nil || tag != rank || rank < 0 || rank >= n {
			t.Fatalf("stdout line %q", sc.Text())
		}
		if i != next[rank] {
			t.Fatalf("rank %d: line %d where line %d was due (lost or repeated output)", rank, i, next[rank])
		}
		next[rank]++
	}
	for r, got := range next {
		if got != per {
			t.Errorf("rank %d: %d lines, want %d", r, got, per)
		}
	}
}
