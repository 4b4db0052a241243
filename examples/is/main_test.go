package main

import (
	"context"
	"strings"
	"testing"

	"github.com/zorilla-p2p/zorilla/examples/internal/npb"
)

func TestMainClassS(t *testing.T) {
	var out, errw strings.Builder
	if code := realMain([]string{"s"}, &out, &errw); code != 0 {
		t.Fatalf("exit %d, stderr %q, stdout\n%s", code, errw.String(), out.String())
	}
	for _, want := range []string{"IS Benchmark Completed.", "Class           =                        S",
		"Size            =                    65536", "Verification    =               SUCCESSFUL"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{nil, {"S", "extra"}, {"C"}, {"-h"}} {
		var out, errw strings.Builder
		if code := realMain(args, &out, &errw); code != 2 || errw.Len() == 0 {
			t.Errorf("args %q: exit %d, stderr %q", args, code, errw.String())
		}
	}
}

func TestRunStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := run(ctx, npb.Solo{}, classes['S'], &strings.Builder{}); err == nil {
		t.Fatal("run on a cancelled context succeeded")
	}
}

// tooMany claims more ranks than class S allows.
type tooMany struct{ npb.Solo }

func (tooMany) Size() int { return 129 }

func TestRunRefusesTooManyRanks(t *testing.T) {
	if _, err := run(context.Background(), tooMany{}, classes['S'], &strings.Builder{}); err == nil {
		t.Fatal("class S accepted 129 ranks")
	}
}

// TestTimedIterationAllocatesNothing checks that the timed loop, as NPB's,
// works in arrays made before it: ten iterations on one rank after the
// untimed one allocate nothing.
func TestTimedIterationAllocatesNothing(t *testing.T) {
	x := &exchange{c: npb.Solo{}, r: newRanker(classes['S'], 1, 0), totals: make([]int32, 512+testArraySize)}
	ctx := context.Background()
	if _, _, err := x.iterate(ctx, 1); err != nil {
		t.Fatal(err)
	}
	it, passed := 0, 0
	allocs := testing.AllocsPerRun(maxIterations-1, func() { // one more call to warm up
		it++
		n, failures, err := x.iterate(ctx, it)
		if err != nil || len(failures) > 0 {
			t.Fatalf("iteration %d: %v %q", it, err, failures)
		}
		passed += n
	})
	if it != maxIterations || passed != testArraySize*maxIterations {
		t.Fatalf("%d iterations passed %d checks, want %d and %d", it, passed, maxIterations, testArraySize*maxIterations)
	}
	if allocs != 0 {
		t.Errorf("a timed iteration allocates %v times", allocs)
	}
}
