package submitter

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// The session's loop stalls (its output file blocks, as a disk under swap
// I/O did for 9 s) for three times LostAfter while its two hosts keep
// sending heartbeats: no host is counted lost, and the job ends done.
// Before the hosts' liveness was stamped where their bytes arrive, the
// loop, back, found every host silent and failed the job.
func TestStalledSessionCountsNoHostLost(t *testing.T) {
	const lostAfter, beat = time.Second, 100 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ln := startLivenessNet(t, ctx, 2, lostAfter, beat)
	fifo := ln.stallSession(t)
	select { // the fault: the session's disk hangs this long
	case <-time.After(3 * lostAfter):
	case rec := <-ln.ended:
		t.Fatalf("the job ended %s during the stall: %s", rec.State, rec.Reason)
	}
	f, err := os.OpenFile(fifo, os.O_RDWR, 0) // never blocks, never reads EOF
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	go func() { _, _ = io.Copy(io.Discard, f) }()
	ln.finish(t)
	if rec := ln.end(t, ctx); rec.State != job.Done || rec.Restarts != 0 {
		t.Fatalf("job ended %s after %d restarts: %s", rec.State, rec.Restarts, rec.Reason)
	}
}

// A host that falls silent (its stream stays open, nothing more comes) is
// counted lost no sooner than LostAfter after its last byte, and within
// LostAfter and one check of it; here with room for a loaded machine,
// whose late checks count at most two checks each (1 in 100 runs took
// 2.3 s under -cpu 1 beside two end-to-end tests).
func TestSilentHostCountedLost(t *testing.T) {
	const lostAfter, beat = time.Second, 100 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ln := startLivenessNet(t, ctx, 2, lostAfter, beat)
	last := ln.reports[1].silence()
	rec := ln.end(t, ctx)
	took := time.Since(last)
	if rec.State != job.Failed || !strings.Contains(rec.Reason, "lost while running (agent silent)") {
		t.Fatalf("job ended %s: %q; want failed, the host silent", rec.State, rec.Reason)
	}
	if took < lostAfter || took > 3*lostAfter {
		t.Fatalf("counted lost %v after its last byte, want between %v and %v", took, lostAfter, 3*lostAfter)
	}
}

// A host whose report stream breaks is counted lost at once, before the
// reports that come after it from other hosts (their ranks' failures,
// which its loss caused, must not read as the program's own).
func TestCutOffHost(t *testing.T) {
	const lostAfter, beat = time.Second, 100 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ln := startLivenessNet(t, ctx, 2, lostAfter, beat)
	ln.reports[1].silence()
	cut := time.Now()
	_ = ln.reports[1].s.Reset()
	rec := ln.end(t, ctx)
	took := time.Since(cut)
	if rec.State != job.Failed || !strings.Contains(rec.Reason, "lost while running (agent unreachable)") {
		t.Fatalf("job ended %s: %q; want failed, the host unreachable", rec.State, rec.Reason)
	}
	if took > lostAfter/2 { // at once; room for a loaded machine
		t.Fatalf("counted lost %v after its stream broke, want at once", took)
	}
}

// A worker that sends beyond its window (more reports than it may keep
// unacknowledged) while the session is busy has its stream reset: the
// submitter holds no more than the window for it, and the host, which
// broke the protocol, is counted lost.
func TestReportsBeyondWindowResetTheStream(t *testing.T) {
	const lostAfter, beat = time.Second, 100 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ln := startLivenessNet(t, ctx, 2, lostAfter, beat)
	fifo := ln.stallSession(t)
	var err error
	for i := 0; i <= 2*proto.MaxUnackedReports && err == nil; i++ {
		err = ln.reports[1].send(proto.Report{Kind: proto.RepOutput, Stream: "stderr", Data: []byte("flood\n")})
	}
	if err == nil {
		t.Fatalf("%d reports sent unacknowledged, the stream still open", 2*proto.MaxUnackedReports+1)
	}
	f, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	go func() { _, _ = io.Copy(io.Discard, f) }()
	// Its end waits behind what it sent, so it may fall silent first.
	if rec := ln.end(t, ctx); rec.State != job.Failed || !strings.Contains(rec.Reason, "lost while running") {
		t.Fatalf("job ended %s: %q; want failed, the flooding host lost", rec.State, rec.Reason)
	}
}

// A lease request whose reply does not come (here every release, held
// for the whole test, as a host that hangs or whose reply is lost) holds
// nothing up: a host that falls silent meanwhile is counted lost, and the
// job ends, within LostAfter and a few checks. The submitter once sent
// the release from its loop and waited for it, up to 31 s with the
// retries of a give-back, while the silence went unnoticed.
func TestSlowLeaseReplyDoesNotDelayHostLost(t *testing.T) {
	const lostAfter, beat = time.Second, 100 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stall := make(chan struct{})
	ln := startLivenessNet(t, ctx, 2, lostAfter, beat, func(w *fakeWorker) { w.stall = stall })
	t.Cleanup(func() { close(stall) }) // first of the cleanups: the workers' handlers return
	last := ln.reports[1].silence()
	rec := ln.end(t, ctx)
	if took := time.Since(last); rec.State != job.Failed || !strings.Contains(rec.Reason, "lost while running") || took > 5*lostAfter {
		t.Fatalf("job ended %s %v after the host fell silent: %s", rec.State, took, rec.Reason)
	}
}

// stallSession makes the job's stdout file a FIFO and sends it a line: the
// session's open of it waits until the test opens the other end of the
// FIFO it returns.
func (ln *livenessNet) stallSession(t *testing.T) string {
	t.Helper()
	fifo := filepath.Join(ln.store.Dir(ln.id), "stdout")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := ln.reports[0].send(proto.Report{Kind: proto.RepOutput, Stream: "stdout", Data: []byte("stalls the session\n")}); err != nil {
		t.Fatal(err)
	}
	return fifo
}
