package testnet

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/internal/blob"
	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/job/submitter"
	"github.com/zorilla-p2p/zorilla/node"
)

// Stop and resume: `zorilla stop --checkpoint` mid-run makes the
// ranks take a checkpoint (though --checkpoint-every would take none),
// ends every process and frees the hosts; `zorilla resume --elsewhere`
// restarts the job from it on other hosts, and it ends with exactly the
// result of an uninterrupted run.
func TestStopResume(t *testing.T) {
	if testing.Short() {
		t.Skip("7 agents, real processes")
	}
	// Six agents in the pool: the stopped run takes three, the resumed run
	// the three others.
	ln := startLaunchNet(t, 7, 2, func(i int, cfg *node.Config) {
		if i > 0 {
			cfg.Labels = []string{poolLabel}
		}
	})
	sub := ln.Nodes[0].Submitter()
	prog := buildExample(t, ln.Nodes[0], "heat")

	ref := submitJob(t, ln.Nodes[0], heatJob(), prog)
	refRec := ref.wait(t)
	if refRec.State != job.Done {
		t.Fatalf("uninterrupted run ended %s: %s\n%s", refRec.State, refRec.Reason, ref.describe())
	}
	want := heatSum(t, ref)
	ln.awaitCheckpointsGone(t, refRec)

	// Stopped well into the run: after its second periodic checkpoint.
	// (cancel-stopped below stops a job whose interval never passes.)
	d := heatJob()
	d.CheckpointEvery = 300 * time.Millisecond
	w := submitJob(t, ln.Nodes[0], d, prog)
	base := ln.awaitCheckpoint(t, w, 2)
	stopWhenReleased(t, sub, w)
	stopped := w.wait(t)
	if stopped.State != job.Stopped {
		t.Fatalf("after the stop: %s (%s)\n%s", stopped.State, stopped.Reason, w.describe())
	}
	cp, ok := stopped.LastComplete()
	if !ok || cp.Num <= base || len(stopped.Runs) != 1 || len(stopped.Checkpoints) != 1 {
		t.Fatalf("stopped with checkpoints %+v, runs %+v: want one complete checkpoint after %d, of one run", stopped.Checkpoints, stopped.Runs, base)
	}
	ln.awaitClean(t, w.id, nil)
	for _, f := range cp.Files {
		if h, err := blob.ParseHash(f.Hash); err != nil || !ln.Nodes[0].Blobs().Has(h) {
			t.Fatalf("rank %d's file of checkpoint %d is gone from the submitter: %v", f.Rank, cp.Num, err)
		}
	}

	// Bad input: clear errors, nothing changes.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := sub.Stop(ctx, w.id, time.Second); !errors.Is(err, job.ErrNotStoppable) {
		t.Errorf("stop of a stopped job: %v, want ErrNotStoppable", err)
	}
	if err := sub.Stop(ctx, ref.id, time.Second); !errors.Is(err, job.ErrNotStoppable) || !strings.Contains(err.Error(), "done") {
		t.Errorf("stop of a finished job: %v, want ErrNotStoppable saying done", err)
	}
	unknown := proto.NewJobID()
	if err := sub.Stop(ctx, unknown, time.Second); !errors.Is(err, job.ErrUnknownJob) {
		t.Errorf("stop of an unknown job: %v", err)
	}
	if err := sub.Resume(unknown, false); !errors.Is(err, job.ErrUnknownJob) {
		t.Errorf("resume of an unknown job: %v", err)
	}
	if err := sub.Resume(ref.id, false); !errors.Is(err, job.ErrNotResumable) {
		t.Errorf("resume of a finished job: %v, want ErrNotResumable", err)
	}

	if err := sub.Resume(w.id, true); err != nil {
		t.Fatalf("resume: %v", err)
	}
	if err := sub.Resume(w.id, true); !errors.Is(err, job.ErrNotResumable) {
		t.Errorf("second resume: %v, want ErrNotResumable", err)
	}
	w2 := watchJob(ln.Nodes[0], w.id)
	rec := w2.wait(t)
	if rec.State != job.Done {
		t.Fatalf("resumed run ended %s: %s\n%s", rec.State, rec.Reason, w2.describe())
	}
	if got := heatSum(t, w2); got != want {
		t.Fatalf("checksum %s after stop and resume, the uninterrupted run's is %s", got, want)
	}
	restarted := linesMatching(w2.updates(), heatRestarted)
	last := rec.Runs[len(rec.Runs)-1]
	if len(rec.Runs) != 2 || last.From != cp.Num || len(restarted) != 1 || restarted[0].sub[1] != strconv.FormatUint(cp.Num, 10) {
		t.Fatalf("runs %+v, restart lines %v: want a second run from checkpoint %d", rec.Runs, restarted, cp.Num)
	}
	for _, h := range last.Hosts {
		if slices.Contains(rec.Runs[0].Hosts, h) {
			t.Errorf("resumed run on host %s of the stopped run (runs %+v)", h, rec.Runs)
		}
	}
	if step, _ := strconv.Atoi(restarted[0].sub[0]); step < 2 || step >= 40 {
		t.Errorf("restarted at step %d: want a stop in the middle of the 40 steps", step)
	}
	t.Logf("stopped at checkpoint %d (step %s); resumed on 3 other hosts", cp.Num, restarted[0].sub[0])
	ln.awaitCheckpointsGone(t, rec)
	ln.awaitClean(t, w.id, nil)

	t.Run("no-checkpoint-call", func(t *testing.T) { testStopTimeout(t, ln) })
	t.Run("cancel-stopped", func(t *testing.T) { testCancelStopped(t, ln, prog) })
}

// testCancelStopped: a job whose interval never passes takes a checkpoint
// when stopped (CHECKPOINTNOW); cancelling it then drops that checkpoint,
// and it can no longer be resumed.
func testCancelStopped(t *testing.T, ln *launchNet, prog proto.FileRef) {
	d := heatJob()
	d.CheckpointEvery = time.Hour
	sub := ln.Nodes[0].Submitter()
	w := submitJob(t, ln.Nodes[0], d, prog)
	w.awaitState(t, job.Running)
	stopWhenReleased(t, sub, w)
	if rec := w.wait(t); rec.State != job.Stopped || len(rec.Checkpoints) != 1 || !rec.Checkpoints[0].Complete {
		t.Fatalf("after the stop: %s (%s), checkpoints %+v", rec.State, rec.Reason, rec.Checkpoints)
	}
	if err := sub.Cancel(w.id, "cancelled by the user"); err != nil {
		t.Fatalf("cancel of a stopped job: %v", err)
	}
	rec, err := sub.Get(w.id)
	if err != nil || rec.State != job.Cancelled {
		t.Fatalf("after the cancel: %s, %v", rec.State, err)
	}
	ln.awaitCheckpointsGone(t, rec)
	if err := sub.Resume(w.id, false); !errors.Is(err, job.ErrNotResumable) {
		t.Errorf("resume of a cancelled job: %v, want ErrNotResumable", err)
	}
	ln.awaitClean(t, w.id, nil)
}

// testStopTimeout: a program that never calls Checkpoint (stencil) is not
// stopped: the stop says so after its timeout, and the job runs on to its
// end.
func testStopTimeout(t *testing.T, ln *launchNet) {
	prog := buildExample(t, ln.Nodes[0], "stencil")
	d := job.NewDescription("stencil", []string{"-iters", "150", "-delay", "20ms"}, 3)
	d.Strategy = job.Spread
	d.Require.Labels = []string{poolLabel}
	w := submitJob(t, ln.Nodes[0], d, prog)
	w.awaitState(t, job.Running)
	sub := ln.Nodes[0].Submitter()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var err error
	for {
		err = sub.Stop(ctx, w.id, 500*time.Millisecond)
		if err == nil || !strings.Contains(err.Error(), "try again once it runs") || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err == nil || !strings.Contains(err.Error(), "took no checkpoint within 500ms") || !strings.Contains(err.Error(), "keeps running") {
		t.Fatalf("stop of a job that never checkpoints: %v", err)
	}
	rec := w.wait(t)
	if rec.State != job.Done {
		t.Fatalf("after a stop that timed out the job ended %s: %s\n%s", rec.State, rec.Reason, w.describe())
	}
	ln.awaitClean(t, w.id, nil)
}

// stopWhenReleased stops w's job with a checkpoint once its ranks run: a
// stop before the release is refused with "try again once it runs".
func stopWhenReleased(t *testing.T, sub *submitter.Submitter, w *watcher) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		err := sub.Stop(ctx, w.id, 30*time.Second)
		if err == nil {
			return
		}
		if !strings.Contains(err.Error(), "try again once it runs") || ctx.Err() != nil {
			t.Fatalf("stop: %v\n%s", err, w.describe())
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}
