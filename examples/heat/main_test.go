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
		ok   bool
	}{
		{[]string{"10"}, params{steps: 10, cells: 4096}, true},
		{[]string{"10", "5", "64"}, params{steps: 10, pause: 5, cells: 64}, true},
		{nil, params{}, false},
		{[]string{"0"}, params{}, false},
		{[]string{"10", "-1"}, params{}, false},
		{[]string{"10", "1", "0"}, params{}, false},
		{[]string{"x"}, params{}, false},
		{[]string{"1", "2", "3", "4"}, params{}, false},
	} {
		got, err := parseArgs(tc.args)
		if (err == nil) != tc.ok || tc.ok && got != tc.want {
			t.Errorf("parseArgs(%q) = %+v, %v", tc.args, got, err)
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

// TestStateRoundTrip: what save writes, load reads back; a state of
// another size is refused.
func TestStateRoundTrip(t *testing.T) {
	s := &state{step: 7, trace: 99, u: []float64{1.5, -2, 3}}
	var b bytes.Buffer
	if err := s.save(&b); err != nil {
		t.Fatal(err)
	}
	got := &state{u: make([]float64, 3)}
	if err := got.load(bytes.NewReader(b.Bytes()), 3); err != nil || got.step != 7 || got.trace != 99 || got.u[1] != -2 {
		t.Fatalf("load: %+v %v", got, err)
	}
	if err := (&state{u: make([]float64, 4)}).load(bytes.NewReader(b.Bytes()), 4); err == nil {
		t.Fatal("a state of 3 cells loaded into 4")
	}
	if err := got.load(bytes.NewReader(b.Bytes()[:10]), 3); err == nil {
		t.Fatal("a truncated state loaded")
	}
}

// TestRun: 4 ranks on 2 agents agree with the serial run (heat checks it
// itself, and prints the checksum once).
func TestRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	var out bytes.Buffer
	err := npbtest.Run(ctx, 2, 4, func(c npb.Comm) error {
		var b bytes.Buffer
		err := run(ctx, c.(npb.World).C, params{steps: 30, cells: 101}, &b)
		mu.Lock()
		out.Write(b.Bytes())
		mu.Unlock()
		return err
	})
	if err != nil || strings.Count(out.String(), "heat OK ") != 1 {
		t.Fatalf("%v\n%s", err, out.String())
	}
}
