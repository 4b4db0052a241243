package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSizes(t *testing.T) {
	if got := sizes(10); !slices.Equal(got, []int{1, 2, 4, 8, 10}) {
		t.Fatalf("sizes(10) = %v", got)
	}
	if got := sizes(1); !slices.Equal(got, []int{1}) {
		t.Fatalf("sizes(1) = %v", got)
	}
}

func TestNextReps(t *testing.T) {
	if n := nextReps(100, 10*time.Millisecond); n != 500 { // 100µs per round trip, twice that next
		t.Fatalf("nextReps = %d", n)
	}
	if n := nextReps(4, 10*time.Second); n != 4 {
		t.Fatalf("slow size: %d rounds, want the floor of 4", n)
	}
}

func TestUsage(t *testing.T) {
	var out, errs bytes.Buffer
	if code := realMain([]string{"0"}, &out, &errs); code != 2 || !strings.Contains(errs.String(), "usage") {
		t.Fatalf("exit %d, stderr %q", code, errs.String())
	}
}
