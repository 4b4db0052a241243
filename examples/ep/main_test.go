package main

import (
	"context"
	"strings"
	"testing"

	"github.com/zorilla-p2p/zorilla/examples/internal/npb"
)

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{nil, {"S", "extra"}, {"Z"}, {""}} {
		var out, errw strings.Builder
		if code := realMain(args, &out, &errw); code != 2 || errw.Len() == 0 {
			t.Errorf("args %q: exit %d, stderr %q", args, code, errw.String())
		}
	}
}

func TestRunReportsFailedVerification(t *testing.T) {
	// A class of 2^20 pairs with made-up verification values: run must
	// compute, print the report and say UNSUCCESSFUL.
	p := params{class: 'T', m: 20, sx: 1, sy: 1}
	var out strings.Builder
	res, err := run(context.Background(), npb.Solo{}, p, &out)
	if err != nil || res.Verified {
		t.Fatalf("run = %+v, %v", res, err)
	}
	for _, want := range []string{"Verification    =             UNSUCCESSFUL", "Relative errors", "Counts:", "Size            =                  2097152"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
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
