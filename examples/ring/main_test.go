package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestParseArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int64
		ok   bool
	}{
		{nil, defaultLaps, true},
		{[]string{"7"}, 7, true},
		{[]string{"0"}, 0, false},
		{[]string{"x"}, 0, false},
		{[]string{"1", "2"}, 0, false},
	} {
		got, err := parseArgs(tc.args)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseArgs(%q) = %d, %v", tc.args, got, err)
		}
	}
}

// TestUsage: a bad argument exits 2 before touching the agent.
func TestUsage(t *testing.T) {
	var out, errs bytes.Buffer
	if code := realMain([]string{"-3"}, &out, &errs); code != 2 || !strings.Contains(errs.String(), "usage") {
		t.Fatalf("exit %d, stderr %q", code, errs.String())
	}
}
