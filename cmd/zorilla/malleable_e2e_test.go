package main

import (
	"context"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/node"
	"github.com/zorilla-p2p/zorilla/testnet/localnet"
)

// Malleable jobs on agent processes: four one-slot agents and
// examples/heat, which takes a checkpoint at every step (each quiet: its
// messages are all received within the step) and, restarted at another
// size, reads the old ranks' blocks that overlap its own. Every run must
// print the checksum of a run that never changed size.

// heatOK is rank 0's verdict line of examples/heat.
var heatOK = regexp.MustCompile(`(?m)^\[0\] heat OK ([0-9a-f]{16})$`)

// malleableNet starts four one-slot agents and builds heat; ref is heat's
// checksum for args, from a plain run of one rank.
func malleableNet(t *testing.T, ctx context.Context, args ...string) (n *localnet.Net, heat, ref string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary and starts agent processes")
	}
	bin := zorillaBinary(t)
	heat = exampleBinary(t, "heat")
	n, err := localnet.New("test", io.Discard, bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close(false) })
	if err := n.Up(ctx, 4, 1); err != nil {
		t.Fatal(err)
	}
	quick := append([]string{args[0], "0"}, args[2:]...) // no pause: the checksum is the same
	r := zorilla(append([]string{"submit", "--data-dir", n.Agents()[0].Dir, "-n", "1", heat}, quick...)...)
	m := heatOK.FindStringSubmatch(r.stdout)
	if r.code != 0 || m == nil {
		t.Fatalf("reference run: %v", r)
	}
	return n, heat, m[1]
}

// submitAsync runs `zorilla submit` in the background.
func submitAsync(args ...string) (out, errw *syncBuffer, code <-chan int) {
	out, errw = &syncBuffer{}, &syncBuffer{}
	c := make(chan int, 1)
	go func() { c <- run(append([]string{"zorilla", "submit"}, args...), out, errw) }()
	return out, errw, c
}

// awaitExit waits for a submit's exit status.
func awaitExit(t *testing.T, ctx context.Context, what string, code <-chan int, out, errw *syncBuffer) int {
	t.Helper()
	select {
	case c := <-code:
		return c
	case <-ctx.Done():
		t.Fatalf("%s still running\n--- stdout\n%s--- stderr\n%s", what, out.String(), errw.String())
	}
	return -1
}

// lastJob is the newest job the agent of dir knows.
func lastJob(t *testing.T, ctx context.Context, dir string) job.Record {
	t.Helper()
	cl, err := node.Dial(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	recs, err := cl.Jobs(ctx)
	if err != nil || len(recs) == 0 {
		t.Fatalf("jobs: %v %v", recs, err)
	}
	last := recs[0]
	for _, r := range recs {
		if r.Created.After(last.Created) {
			last = r
		}
	}
	return last
}

// TestMalleableGrows: a -n 2:4 job submitted while two of the four hosts
// run another job starts at 2, and grows to 4 once they free; its result
// is the checksum of a run that never changed size.
func TestMalleableGrows(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	n, heat, ref := malleableNet(t, ctx, "60", "150", "2000")
	dir := n.Agents()[0].Dir
	blocker := script(t, "sleep 6")
	bout, berr, bcode := submitAsync("--data-dir", dir, "-n", "2", "-a", "spread", blocker)
	waitFor(t, time.Minute, "the blocker running", func() bool {
		return strings.Contains(zorilla("jobs", "--data-dir", dir).stdout, "running")
	})
	out, errw, code := submitAsync("--data-dir", dir, "-n", "2:4", "-a", "spread", "--resize-every", "1s", heat, "60", "150", "2000")
	if c := awaitExit(t, ctx, "the blocker", bcode, bout, berr); c != 0 {
		t.Fatalf("blocker: exit %d\n%s", c, berr.String())
	}
	c := awaitExit(t, ctx, "the malleable job", code, out, errw)
	m := heatOK.FindStringSubmatch(out.String())
	if c != 0 || m == nil || m[1] != ref {
		t.Fatalf("exit %d, want the checksum %s\n--- stdout\n%s--- stderr\n%s", c, ref, out.String(), errw.String())
	}
	rec := lastJob(t, ctx, dir)
	if len(rec.Resizes) == 0 || rec.Resizes[0].From != 2 || rec.WorldSize() != 4 {
		t.Fatalf("resizes %+v, size %d: want it to start at 2 and end at 4\n%s", rec.Resizes, rec.WorldSize(), errw.String())
	}
	if !strings.Contains(out.String(), "of 2 ranks, now ") {
		t.Fatalf("heat did not say it restarted at another size\n%s", out.String())
	}
	t.Logf("resizes: %+v", rec.Resizes)
}

// TestMalleableShrinksOnHostLost: a host of a -n 2:4 -r 1 job is killed
// while it runs: the job starts again on the three hosts left (no new
// match, no wait for a replacement; once the lost host's fence closed)
// and completes verified.
func TestMalleableShrinksOnHostLost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	n, heat, ref := malleableNet(t, ctx, "60", "150", "2000")
	dir := n.Agents()[0].Dir
	out, errw, code := submitAsync("--data-dir", dir, "-n", "2:4", "-a", "spread", heat, "60", "150", "2000")
	waitFor(t, time.Minute, "four heat ranks running", func() bool { return len(programCopies(t, n, "heat")) == 4 })
	waitFor(t, time.Minute, "a checkpoint of all four", func() bool {
		_, ok := lastJob(t, ctx, dir).LastComplete()
		return ok
	})
	victim := -1
	for _, cp := range programCopies(t, n, "heat") {
		if cp.agent > 0 {
			victim = cp.agent
		}
	}
	if err := n.Agents()[victim].Process().Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	c := awaitExit(t, ctx, "the malleable job", code, out, errw)
	m := heatOK.FindStringSubmatch(out.String())
	if c != 0 || m == nil || m[1] != ref {
		t.Fatalf("exit %d, want the checksum %s\n--- stdout\n%s--- stderr\n%s", c, ref, out.String(), errw.String())
	}
	rec := lastJob(t, ctx, dir)
	if len(rec.Resizes) == 0 || rec.Resizes[0].Why != "host lost" || rec.Resizes[0].To != 3 || rec.Restarts != 0 || rec.Matches != 1 {
		t.Fatalf("resizes %+v, %d restarts, %d matches: want a shrink to 3 without a new match\n%s", rec.Resizes, rec.Restarts, rec.Matches, errw.String())
	}
	t.Logf("shrunk %v after the kill", rec.Resizes[0].At.Sub(killed).Round(time.Millisecond))
}

// TestMalleableGivesWay: a rigid -n 2 job submitted while a malleable
// -n 2:4 job holds all four slots starts once the malleable job reached
// its next checkpoint and gave two hosts back; both complete verified.
func TestMalleableGivesWay(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	n, heat, ref := malleableNet(t, ctx, "80", "150", "2000")
	dir := n.Agents()[0].Dir
	mout, merr, mcode := submitAsync("--data-dir", dir, "-n", "2:4", "-a", "spread", heat, "80", "150", "2000")
	waitFor(t, time.Minute, "four heat ranks running", func() bool { return len(programCopies(t, n, "heat")) == 4 })
	submitted := time.Now()
	rout, rerr, rcode := submitAsync("--data-dir", n.Agents()[1].Dir, "-n", "2", "-a", "spread", heat, "20", "0", "2000")
	c := awaitExit(t, ctx, "the rigid job", rcode, rout, rerr)
	if c != 0 || heatOK.FindStringSubmatch(rout.String()) == nil {
		t.Fatalf("rigid job: exit %d\n--- stdout\n%s--- stderr\n%s", c, rout.String(), rerr.String())
	}
	rigid := lastJob(t, ctx, n.Agents()[1].Dir)
	started := stateAt(rigid, job.Running)
	c = awaitExit(t, ctx, "the malleable job", mcode, mout, merr)
	m := heatOK.FindStringSubmatch(mout.String())
	if c != 0 || m == nil || m[1] != ref {
		t.Fatalf("malleable job: exit %d, want the checksum %s\n--- stdout\n%s--- stderr\n%s", c, ref, mout.String(), merr.String())
	}
	rec := lastJob(t, ctx, dir)
	if len(rec.Resizes) == 0 || !strings.HasPrefix(rec.Resizes[0].Why, "gave way to ") || rec.Resizes[0].To != 2 {
		t.Fatalf("resizes %+v: want a shrink to 2 that gave way\n%s", rec.Resizes, merr.String())
	}
	t.Logf("the rigid job ran %v after its submission; the malleable job gave way %v after it",
		started.Sub(submitted).Round(time.Millisecond), rec.Resizes[0].At.Sub(submitted).Round(time.Millisecond))
}

// stateAt is when a record first entered state s (the zero time if never).
func stateAt(r job.Record, s job.State) time.Time {
	for _, c := range r.History {
		if c.State == s {
			return c.At
		}
	}
	return time.Time{}
}
