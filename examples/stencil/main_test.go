package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestParseArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		ok   bool
	}{
		{nil, true},
		{[]string{"-iters", "5", "-block", "1024", "-delay", "10ms"}, true},
		{[]string{"-iters", "0"}, false},
		{[]string{"-points", "-1"}, false},
		{[]string{"-block", "100000000"}, false},
		{[]string{"extra"}, false},
	} {
		var errs bytes.Buffer
		if _, err := parseArgs(tc.args, &errs); (err == nil) != tc.ok {
			t.Errorf("parseArgs(%q): %v", tc.args, err)
		}
	}
}

// TestUsage: a bad argument exits 2 before touching the agent.
func TestUsage(t *testing.T) {
	var out, errs bytes.Buffer
	if code := realMain([]string{"-iters", "x"}, &out, &errs); code != 2 || !strings.Contains(errs.String(), "iters") {
		t.Fatalf("exit %d, stderr %q", code, errs.String())
	}
}

// TestLocalStepMatchesSerial: the distributed step, fed the right halos,
// computes the serial step's points.
func TestLocalStepMatchesSerial(t *testing.T) {
	const ranks, points = 3, 5
	u := initial(ranks * points)
	next := step(u, 7)
	for r := range ranks {
		lo := r * points
		left := u[(lo+len(u)-1)%len(u)]
		right := u[(lo+points)%len(u)]
		got := localStep(u[lo:lo+points], left, right, lo, 7)
		for i, v := range got {
			if v != next[lo+i] {
				t.Fatalf("rank %d point %d: %d, want %d", r, i, v, next[lo+i])
			}
		}
	}
}
