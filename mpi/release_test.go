package mpi

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/zorilla-p2p/zorilla/mpi/internal/proto"
)

// TestReleasedThenFailed: a rank its agent released just before the job
// failed (Start, then Fail, both read before Init looks) gets through
// Init, and its first call returns the failure; a rank the job failed
// before its release gets the failure from Init. Each is tried many times:
// Init once chose between the two at random.
func TestReleasedThenFailed(t *testing.T) {
	abort := proto.Fail{Cause: proto.CauseAborted, Rank: 2, Code: 3, Reason: "rank 2 called Abort(3)"}.Encode()
	isAbort := func(err error) bool {
		var je *JobError
		return errors.As(err, &je) && je.Cause == "aborted" && je.Rank == 2 && je.Code == 3
	}
	for range 100 {
		s := newSession(discardConn(t), Options{Rank: 0, Size: 3}, 64)
		s.readLoop(bufio.NewReader(bytes.NewReader(append(proto.NewFrame(proto.TypeStart, 0), abort...))))
		if err := s.awaitRelease(context.Background()); err != nil {
			t.Fatalf("released, then failed: Init returned %v", err)
		}
		if _, err := Recv(s.world, make([]byte, 1), AnySource, AnyTag); !isAbort(err) {
			t.Fatalf("released, then failed: the first receive returned %v, want the abort", err)
		}
	}
	s := newSession(discardConn(t), Options{Rank: 0, Size: 3}, 64)
	s.readLoop(bufio.NewReader(bytes.NewReader(abort)))
	if err := s.awaitRelease(context.Background()); !isAbort(err) {
		t.Fatalf("failed before the release: Init returned %v, want the abort", err)
	}
}
