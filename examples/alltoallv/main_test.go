package main

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/examples/internal/npb"
	"github.com/zorilla-p2p/zorilla/examples/internal/npb/npbtest"
)

func TestParseArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want params
		err  string
	}{
		{[]string{"524288", "100", "15ms"}, params{524288, 100, 15 * time.Millisecond}, ""},
		{[]string{"1", "1", "0"}, params{1, 1, 0}, ""},
		{[]string{"0", "1", "0"}, params{}, "BLOCK"},
		{[]string{"1", "x", "0"}, params{}, "ITER"},
		{[]string{"1", "1", "-1s"}, params{}, "WORK"},
		{[]string{"1", "1"}, params{}, "3 arguments"},
	} {
		got, err := parseArgs(tc.args)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: error %v, want one about %s", tc.args, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%v: %+v, %v; want %+v", tc.args, got, err, tc.want)
		}
	}
}

func TestUsage(t *testing.T) {
	var out, errs bytes.Buffer
	if code := realMain([]string{"0", "1", "0"}, &out, &errs); code != 2 || !strings.Contains(errs.String(), "usage") {
		t.Fatalf("exit %d, stderr %q", code, errs.String())
	}
}

// TestRun: 3 ranks on one agent and 4 over 2 agents exchange and check
// their blocks, with some work between calls, and rank 0 reports.
func TestRun(t *testing.T) {
	for _, tc := range []struct{ agents, ranks int }{{1, 3}, {2, 4}} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		var mu sync.Mutex
		var report strings.Builder
		err := npbtest.Run(ctx, tc.agents, tc.ranks, func(c npb.Comm) error {
			var out strings.Builder
			err := run(ctx, c, params{block: 1000, iters: 5, work: time.Millisecond}, &out)
			mu.Lock()
			report.WriteString(out.String())
			mu.Unlock()
			return err
		})
		cancel()
		if err != nil {
			t.Fatalf("%d ranks on %d agents: %v", tc.ranks, tc.agents, err)
		}
		if !strings.Contains(report.String(), "5 calls") {
			t.Errorf("%d ranks on %d agents: rank 0's report %q", tc.ranks, tc.agents, report.String())
		}
	}
}
