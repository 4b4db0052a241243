package job

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
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
	// The job's stdout file is a FIFO: the session's open of it waits
	// until the test opens the other end.
	fifo := filepath.Join(ln.store.Dir(ln.id), "stdout")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := ln.reports[0].send(Report{Kind: RepOutput, Stream: "stdout", Data: []byte("stalls the session\n")}); err != nil {
		t.Fatal(err)
	}
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
	if rec := ln.end(t, ctx); rec.State != Done || rec.Restarts != 0 {
		t.Fatalf("job ended %s after %d restarts: %s", rec.State, rec.Restarts, rec.Reason)
	}
}

// A host that falls silent (its stream stays open, nothing more comes) is
// counted lost no sooner than LostAfter after its last byte, and within
// LostAfter and one check of it (here with room for a loaded machine).
func TestSilentHostCountedLost(t *testing.T) {
	const lostAfter, beat = time.Second, 100 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ln := startLivenessNet(t, ctx, 2, lostAfter, beat)
	last := ln.reports[1].silence()
	rec := ln.end(t, ctx)
	took := time.Since(last)
	if rec.State != Failed || !strings.Contains(rec.Reason, "lost while running (agent silent)") {
		t.Fatalf("job ended %s: %q; want failed, the host silent", rec.State, rec.Reason)
	}
	if took < lostAfter || took > 2*lostAfter {
		t.Fatalf("counted lost %v after its last byte, want between %v and %v", took, lostAfter, 2*lostAfter)
	}
}

// A host whose report stream breaks and is not opened again is counted
// lost within half of LostAfter and one check (sooner than a silent one);
// one that opens it again at once, as a worker does after a break, is not
// lost.
func TestCutOffHost(t *testing.T) {
	const lostAfter, beat = time.Second, 100 * time.Millisecond
	for _, reopen := range []bool{false, true} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		ln := startLivenessNet(t, ctx, 2, lostAfter, beat)
		r := ln.reports[1]
		if reopen {
			if err := r.reopen(ctx, ln.workers[1], ln.subID, ln.commits[1]); err != nil {
				t.Fatal(err)
			}
			select { // the old stream's end must not count: give it time to
			case <-time.After(lostAfter):
			case rec := <-ln.ended:
				t.Fatalf("reopened: the job ended %s: %s", rec.State, rec.Reason)
			}
			ln.finish(t)
			if rec := ln.end(t, ctx); rec.State != Done {
				t.Fatalf("reopened: job ended %s: %s", rec.State, rec.Reason)
			}
			continue
		}
		r.silence()
		cut := time.Now()
		_ = r.s.Reset()
		rec := ln.end(t, ctx)
		took := time.Since(cut)
		if rec.State != Failed || !strings.Contains(rec.Reason, "lost while running (agent unreachable)") {
			t.Fatalf("job ended %s: %q; want failed, the host unreachable", rec.State, rec.Reason)
		}
		// Half of LostAfter and one check, with room for a loaded machine.
		if took > lostAfter+lostAfter/2 {
			t.Fatalf("counted lost %v after its stream broke, want within %v", took, lostAfter+lostAfter/2)
		}
	}
}

// A worker that sends beyond its window (more reports than it may keep
// unacknowledged) while the session is busy has its stream reset: the
// submitter holds no more than the window for it, and the host, which
// broke the protocol, is cut off and counted lost.
func TestReportsBeyondWindowResetTheStream(t *testing.T) {
	const lostAfter, beat = time.Second, 100 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ln := startLivenessNet(t, ctx, 2, lostAfter, beat)
	fifo := filepath.Join(ln.store.Dir(ln.id), "stdout")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := ln.reports[0].send(Report{Kind: RepOutput, Stream: "stdout", Data: []byte("stalls the session\n")}); err != nil {
		t.Fatal(err)
	}
	var err error
	for i := 0; i <= 2*MaxUnackedReports && err == nil; i++ {
		err = ln.reports[1].send(Report{Kind: RepOutput, Stream: "stderr", Data: []byte("flood\n")})
	}
	if err == nil {
		t.Fatalf("%d reports sent unacknowledged, the stream still open", 2*MaxUnackedReports+1)
	}
	f, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	go func() { _, _ = io.Copy(io.Discard, f) }()
	if rec := ln.end(t, ctx); rec.State != Failed || !strings.Contains(rec.Reason, "(agent unreachable)") {
		t.Fatalf("job ended %s: %q; want failed, the flooding host cut off", rec.State, rec.Reason)
	}
}
