package testnet

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// The r = 1 rows of the failure table: a host dies while the job runs; the
// job starts again on other hosts while it has retries, and fails naming
// the host when it has none.

// gatedScript prints where each rank runs and its pid, then waits for the
// file $GO: the first run's processes are still waiting when their host
// is stopped, and only the run after the gate opens completes.
const gatedScript = `echo "at $ZORILLA_RANK $ZORILLA_REPLICA $ZORILLA_AGENT"; echo "pid $$"
until [ -e "$GO" ]; do sleep 0.05; done`

// restartNotice is the line the user reads when the job starts again.
var restartNotice = regexp.MustCompile(`^(host \S+ lost while running .*); starting the job again on other hosts`)

// runGatedUntilLoss submits a gated n=4 spread job with the given retries
// through agent 0, waits until every rank runs, and stops the agent of one
// of its hosts. It returns the watcher, the gate, and the host stopped.
func runGatedUntilLoss(t *testing.T, ln *launchNet, retries int) (*watcher, string, peer.ID) {
	t.Helper()
	prog := uploadScript(t, ln.Nodes[0], gatedScript)
	gate := filepath.Join(t.TempDir(), "go")
	d := job.NewDescription("prog.sh", nil, 4)
	d.Strategy, d.Retries = job.Spread, retries
	d.Require.Labels = []string{poolLabel}
	d.Env = map[string]string{"GO": gate}
	w := submitJob(t, ln.Nodes[0], d, prog)
	w.awaitLines(t, atLine, 4)
	rec, err := ln.Nodes[0].Submitter().Get(w.id)
	if err != nil || rec.Plan == nil {
		t.Fatalf("record while running: %v", err)
	}
	victim := rec.Plan.Hosts[len(rec.Plan.Hosts)-1].Offer.Peer
	if err := ln.Stop(ln.Index(victim)); err != nil {
		t.Fatal(err)
	}
	return w, gate, victim
}

// testHostLostRestart: with retries left, the job runs again elsewhere and
// completes; the record holds both attempts, the first ended by the lost
// host, the second without it; every rank completes once, in the second.
func testHostLostRestart(t *testing.T, ln *launchNet) {
	w, gate, victim := runGatedUntilLoss(t, ln, 2)
	w.awaitLines(t, restartNotice, 1)
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	rec := w.wait(t)
	if rec.State != job.Done || rec.Exit != 0 {
		t.Fatalf("job ended %s (exit %d): %s\n%s", rec.State, rec.Exit, rec.Reason, w.describe())
	}
	if rec.Restarts != 1 || len(rec.Runs) != 2 {
		t.Fatalf("%d restarts, runs %+v: want one restart and two runs", rec.Restarts, rec.Runs)
	}
	first, second := rec.Runs[0], rec.Runs[1]
	if !slices.Contains(first.Hosts, victim) || !strings.Contains(first.End, "lost while running") {
		t.Errorf("first run %+v: want it on %s, ended by its loss", first, victim)
	}
	if slices.Contains(second.Hosts, victim) || second.End != "done" {
		t.Errorf("second run %+v: want it done without %s", second, victim)
	}
	if !slices.Contains(rec.Unavailable, victim) {
		t.Errorf("unavailable %v: want %s", rec.Unavailable, victim)
	}
	ats := linesMatching(w.updates(), atLine)
	if len(ats) != 8 {
		t.Fatalf("%d placement lines, want 4 per run", len(ats))
	}
	for _, l := range ats[4:] {
		if p, err := peer.Decode(l.sub[2]); err == nil && p == victim {
			t.Errorf("rank %s ran again on the lost host", l.sub[0])
		}
	}
	ln.awaitClean(t, w.id, printedPids(t, w.updates()))
}

// testHostLostNoRetries: with --retries 0 the same loss fails the job at
// once, naming the host.
func testHostLostNoRetries(t *testing.T, ln *launchNet) {
	w, _, victim := runGatedUntilLoss(t, ln, 0)
	rec := w.wait(t)
	if rec.State != job.Failed || rec.Exit == 0 {
		t.Fatalf("job ended %s (exit %d): %s", rec.State, rec.Exit, rec.Reason)
	}
	short := victim.String()
	short = short[:4] + "…" + short[len(short)-4:]
	if !strings.Contains(rec.Reason, "host "+short+" lost while running") || !strings.Contains(rec.Reason, "retries 0") {
		t.Errorf("reason %q: want the host %s named and retries 0", rec.Reason, short)
	}
	if rec.Restarts != 0 || len(rec.Runs) != 1 || len(linesMatching(w.updates(), restartNotice)) != 0 {
		t.Errorf("%d restarts, %d runs: want none started again", rec.Restarts, len(rec.Runs))
	}
	ln.awaitClean(t, w.id, printedPids(t, w.updates()))
}

// testBadProgram: a program no host can run (here a file of text without
// a #! line: exec format error) fails the job within its first match,
// saying why in the kernel's and the user's words, after one spare.
func testBadProgram(t *testing.T, ln *launchNet) {
	path := filepath.Join(t.TempDir(), "prog.sh")
	if err := os.WriteFile(path, []byte("echo this is not a program\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	h, size, err := ln.Nodes[0].Blobs().PutFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d := job.NewDescription("prog.sh", nil, 4)
	d.Strategy = job.Spread
	d.Require.Labels = []string{poolLabel}
	w := submitJob(t, ln.Nodes[0], d, proto.FileRef{Name: "prog.sh", Hash: h.String(), Size: size})
	rec := w.wait(t)
	if rec.State != job.Failed || rec.Exit == 0 {
		t.Fatalf("job ended %s (exit %d): %s", rec.State, rec.Exit, rec.Reason)
	}
	if !strings.Contains(rec.Reason, "the program cannot start on host ") || !strings.Contains(rec.Reason, "exec format error") ||
		!strings.Contains(rec.Reason, "2 hosts said so") {
		t.Errorf("reason %q: want the cause named", rec.Reason)
	}
	if rec.Matches != 1 || rec.Attempts != 2 || len(rec.BadProgram) != 2 {
		t.Errorf("%d matches, %d starts, bad on %v: want the first start and one retry, then the end", rec.Matches, rec.Attempts, rec.BadProgram)
	}
	ln.awaitClean(t, w.id, nil)
}
