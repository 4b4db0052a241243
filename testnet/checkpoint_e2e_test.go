package testnet

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/internal/blob"
	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/node"
)

// A job with r = 1 that loses a host starts again from its last
// complete checkpoint and ends with exactly the result of a run that lost
// nothing.

// heatOK is examples/heat's last line: its field checked against a
// serial run, and its checksum.
var heatOK = regexp.MustCompile(`^heat OK ([0-9a-f]{16})$`)

// heatRestarted is what heat's rank 0 prints when it restarts from a
// checkpoint.
var heatRestarted = regexp.MustCompile(`^heat: restarted at step (\d+) from checkpoint (\d+)$`)

// checkpointTrials is how many seeded kills TestCheckpointRestart runs:
// ZORILLA_CKPT_TRIALS (20 for the figure in BENCHMARKS.md), 3 by default.
func checkpointTrials(t *testing.T) int {
	if v := os.Getenv("ZORILLA_CKPT_TRIALS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("ZORILLA_CKPT_TRIALS=%q: a number from 1", v)
		}
		return n
	}
	return 3
}

// heatJob is the job of these tests: 3 ranks of heat, 40 steps of 50 ms,
// a checkpoint at every step, on the pool's agents.
func heatJob() job.Description {
	d := job.NewDescription("heat", []string{"40", "50", "3000"}, 3)
	d.Strategy, d.Retries = job.Spread, 2
	d.Require.Labels = []string{poolLabel}
	return d
}

func TestCheckpointRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("7 agents, real processes, hosts stopped")
	}
	ln := startLaunchNet(t, 7, 2, func(i int, cfg *node.Config) {
		if i == 0 {
			// Time between the loss and the restart, for the corruption below.
			cfg.Services.Submitter.Retry.Backoff = 2 * time.Second
		}
	})
	prog := buildExample(t, ln.Nodes[0], "heat")

	w := submitJob(t, ln.Nodes[0], heatJob(), prog)
	rec := w.wait(t)
	if rec.State != job.Done {
		t.Fatalf("uninterrupted run ended %s: %s\n%s", rec.State, rec.Reason, w.describe())
	}
	ref := heatSum(t, w)
	ln.awaitCheckpointsGone(t, rec)
	ln.awaitClean(t, w.id, nil)

	for trial := range checkpointTrials(t) {
		rng := rand.New(rand.NewPCG(16, uint64(trial)))
		after := uint64(1 + rng.IntN(20))
		w := submitJob(t, ln.Nodes[0], heatJob(), prog)
		cp := ln.awaitCheckpoint(t, w, after)
		rec, err := ln.Nodes[0].Submitter().Get(w.id)
		if err != nil || rec.Plan == nil {
			t.Fatalf("trial %d: record while running: %v", trial, err)
		}
		victim := ln.Index(rec.Plan.Hosts[rng.IntN(len(rec.Plan.Hosts))].Offer.Peer)
		if err := ln.Stop(victim); err != nil {
			t.Fatal(err)
		}
		rec = w.wait(t)
		if rec.State != job.Done {
			t.Fatalf("trial %d: ended %s: %s\n%s", trial, rec.State, rec.Reason, w.describe())
		}
		if got := heatSum(t, w); got != ref {
			t.Fatalf("trial %d: checksum %s, the uninterrupted run's is %s", trial, got, ref)
		}
		last := rec.Runs[len(rec.Runs)-1]
		restarted := linesMatching(w.updates(), heatRestarted)
		if len(rec.Runs) != 2 || last.From < cp || len(restarted) != 1 || restarted[0].sub[1] != strconv.FormatUint(last.From, 10) {
			t.Fatalf("trial %d: runs %+v, restart lines %v: want a second run from checkpoint %d or later", trial, rec.Runs, restarted, cp)
		}
		t.Logf("trial %d: agent %d stopped after checkpoint %d; the second run went on from checkpoint %d (step %s)",
			trial, victim, cp, last.From, restarted[0].sub[0])
		ln.awaitCheckpointsGone(t, rec)
		ln.awaitClean(t, w.id, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err = ln.Restart(ctx, victim)
		if err == nil {
			err = ln.awaitNeighbours(ctx)
		}
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Run("corrupt-copies", func(t *testing.T) { testCorruptCopies(t, ln, prog, ref) })
	t.Run("from-scratch", func(t *testing.T) { testFromScratch(t, ln, prog, ref) })
}

// testFromScratch: a job that took no checkpoint (its interval never
// passed) starts again from scratch, says so, and still ends right.
func testFromScratch(t *testing.T, ln *launchNet, prog proto.FileRef, ref string) {
	d := heatJob()
	d.CheckpointEvery = time.Hour
	w := submitJob(t, ln.Nodes[0], d, prog)
	w.awaitState(t, job.Running)
	rec, err := ln.Nodes[0].Submitter().Get(w.id)
	if err != nil || rec.Plan == nil {
		t.Fatalf("record while running: %v", err)
	}
	victim := -1
	for _, h := range rec.Plan.Hosts {
		if i := ln.Index(h.Offer.Peer); ln.Live(i) {
			victim = i
		}
	}
	if err := ln.Stop(victim); err != nil {
		t.Fatal(err)
	}
	rec = w.wait(t)
	if rec.State != job.Done || heatSum(t, w) != ref {
		t.Fatalf("ended %s: %s\n%s", rec.State, rec.Reason, w.describe())
	}
	notice := linesMatching(w.updates(), regexp.MustCompile(`starting the job again on other hosts .*, from scratch \(no complete checkpoint\)$`))
	if len(rec.Runs) != 2 || rec.Runs[1].From != 0 || len(notice) != 1 || len(rec.Checkpoints) != 0 {
		t.Fatalf("runs %+v, %d notices, checkpoints %+v: want a second run from scratch, said once", rec.Runs, len(notice), rec.Checkpoints)
	}
	ln.awaitClean(t, w.id, nil)
}

// testCorruptCopies: once a host is lost, the submitter's copies of the
// last checkpoint's files are damaged (one truncated, one with a byte
// changed) before the restart stages them: the new hosts detect it by the
// hash and take the copies the other agents hold, and the job still ends
// with the uninterrupted run's result.
func testCorruptCopies(t *testing.T, ln *launchNet, prog proto.FileRef, ref string) {
	w := submitJob(t, ln.Nodes[0], heatJob(), prog)
	ln.awaitCheckpoint(t, w, 3)
	rec, err := ln.Nodes[0].Submitter().Get(w.id)
	if err != nil || rec.Plan == nil {
		t.Fatalf("record while running: %v", err)
	}
	victim := rec.Plan.Hosts[0].Offer.Peer
	if err := ln.Stop(ln.Index(victim)); err != nil {
		t.Fatal(err)
	}
	w.awaitLines(t, restartNotice, 1)
	rec, _ = ln.Nodes[0].Submitter().Get(w.id)
	cp, ok := rec.LastComplete()
	if !ok {
		t.Fatal("no complete checkpoint")
	}
	damaged := 0
	for _, f := range cp.Files {
		if len(f.Copies) < 3 || slices.Contains(f.Copies[1:], victim) {
			continue // its only other copy was on the lost host
		}
		h, err := blob.ParseHash(f.Hash)
		if err != nil {
			t.Fatal(err)
		}
		path := ln.Nodes[0].Blobs().Path(h)
		if damaged == 0 {
			err = os.Truncate(path, f.Size/2)
		} else {
			err = flipByte(path, f.Size/3)
		}
		if err != nil {
			t.Fatal(err)
		}
		damaged++
	}
	if damaged == 0 {
		t.Fatalf("no file of checkpoint %d has a copy outside its host and the submitter: %+v", cp.Num, cp.Files)
	}
	rec = w.wait(t)
	if rec.State != job.Done {
		t.Fatalf("ended %s: %s\n%s", rec.State, rec.Reason, w.describe())
	}
	if got := heatSum(t, w); got != ref {
		t.Fatalf("checksum %s, the uninterrupted run's is %s", got, ref)
	}
	if last := rec.Runs[len(rec.Runs)-1]; last.From < cp.Num {
		t.Fatalf("the second run started from checkpoint %d, want %d or later (%d files damaged)", last.From, cp.Num, damaged)
	}
	t.Logf("%d of %d files of checkpoint %d damaged at the submitter; restarted from checkpoint %d", damaged, len(cp.Files), cp.Num, rec.Runs[len(rec.Runs)-1].From)
	ln.awaitCheckpointsGone(t, rec)
	ln.awaitClean(t, w.id, nil)
}

func flipByte(path string, off int64) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		return err
	}
	b[0] ^= 0xff
	_, err = f.WriteAt(b, off)
	return err
}

// heatSum is the checksum the job's rank 0 printed.
func heatSum(t *testing.T, w *watcher) string {
	t.Helper()
	ok := linesMatching(w.updates(), heatOK)
	if len(ok) != 1 {
		t.Fatalf("%d heat OK lines, want 1\n%s", len(ok), w.describe())
	}
	return ok[0].sub[0]
}

// awaitCheckpoint waits until the job has a complete checkpoint numbered
// at least num, and returns its number.
func (ln *launchNet) awaitCheckpoint(t testing.TB, w *watcher, num uint64) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got uint64
	err := ln.Await(ctx, "a complete checkpoint", func() bool {
		rec, err := ln.Nodes[0].Submitter().Get(w.id)
		if err != nil {
			return false
		}
		c, ok := rec.LastComplete()
		got = c.Num
		return ok && c.Num >= num
	})
	if err != nil {
		t.Fatalf("%v (last %d, want %d)\n%s", err, got, num, w.describe())
	}
	return got
}

// awaitCheckpointsGone waits until the submitting agent (agent 0) holds
// no file of the job's checkpoints any more.
func (ln *launchNet) awaitCheckpointsGone(t *testing.T, rec job.Record) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var left []string
	err := ln.Await(ctx, "no checkpoint file left", func() bool {
		left = nil
		for _, c := range rec.Checkpoints {
			for _, f := range c.Files {
				if h, err := blob.ParseHash(f.Hash); err == nil && ln.Nodes[0].Blobs().Has(h) {
					left = append(left, f.Hash)
				}
			}
		}
		dir := filepath.Join(ln.dirs[0], "jobs", string(rec.ID), "checkpoints")
		if _, err := os.Stat(dir); err == nil {
			left = append(left, dir)
		}
		for i := range ln.Nodes {
			dir := filepath.Join(node.JobsDirOf(ln.dirs[i], os.Geteuid() == 0), ".copies", string(rec.ID))
			if _, err := os.Stat(dir); ln.Live(i) && err == nil {
				left = append(left, dir)
			}
		}
		return len(left) == 0
	})
	if err != nil {
		t.Fatalf("%v: %v", err, left)
	}
}
