package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/examples/internal/npb"
	"github.com/zorilla-p2p/zorilla/examples/internal/npb/npbtest"
	"github.com/zorilla-p2p/zorilla/mpi"
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
		{[]string{"1", "2", "3", "4"}, params{steps: 1, pause: 2, cells: 3, work: 4}, true},
		{[]string{"1", "2", "3", "4", "5"}, params{}, false},
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

// TestRun: the ranks agree with the serial run (heat checks it itself,
// part by part) and rank 0 prints, once, the checksum of the whole line's
// serial run: FNV-64a over every cell's bits in order, then the trace.
// The cases cover margins cut by the line's ends (steps above a part's
// length), one rank, and parts of one cell.
func TestRun(t *testing.T) {
	for _, tc := range []struct {
		ranks int
		p     params
	}{
		{4, params{steps: 30, cells: 101}},
		{3, params{steps: 5, cells: 3000}},
		{1, params{steps: 12, cells: 50}},
		{5, params{steps: 40, cells: 5}},
	} {
		out, err := runRanks(t, tc.ranks, tc.p, nil)
		want := fmt.Sprintf("heat OK %016x\n", wholeSum(tc.p))
		if err != nil || out != want {
			t.Fatalf("%d ranks, %+v: %v\n%q, want %q", tc.ranks, tc.p, err, out, want)
		}
	}
}

// TestCheckFindsAWrongCell: a rank whose cell differs from the serial run
// fails the check, naming the cell; every rank fails (told by the
// reduction, or by the job's abort when another rank's error came first),
// none prints OK.
func TestCheckFindsAWrongCell(t *testing.T) {
	p := params{steps: 9, cells: 40}
	field, trace := wholeSerial(p)
	out, err := runRanks(t, 4, p, func(c *mpi.Comm) *state {
		lo, hi := block(p.cells, c.Rank(), c.Size())
		s := &state{step: uint64(p.steps), trace: trace, u: append([]float64(nil), field[lo:hi]...)}
		if c.Rank() == 2 {
			s.u[3] += 1e-12
		}
		return s
	})
	if err == nil || !strings.Contains(err.Error(), "cell 23 ") || strings.Contains(out, "heat OK") {
		t.Fatalf("%v\n%s", err, out)
	}
}

// runRanks runs heat's ranks as goroutines on 2 agents; with given, each
// rank checks the state it returns instead of running.
func runRanks(t *testing.T, ranks int, p params, given func(c *mpi.Comm) *state) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	var out bytes.Buffer
	err := npbtest.Run(ctx, 2, ranks, func(c npb.Comm) error {
		var b bytes.Buffer
		mc := c.(npb.World).C
		var err error
		if given != nil {
			err = check(mc, given(mc), p, &b)
		} else {
			err = run(ctx, mc, p, &b)
		}
		mu.Lock()
		out.Write(b.Bytes())
		mu.Unlock()
		return err
	})
	return out.String(), err
}

// wholeSerial is the whole line's run on one core, as heat's rank 0 once
// computed it to check the gathered field.
func wholeSerial(p params) ([]float64, uint64) {
	u, v := make([]float64, p.cells), make([]float64, p.cells)
	for i := range u {
		u[i] = initial(i)
	}
	var trace uint64
	for range p.steps {
		stepCells(u, v, 0, 0)
		u, v = v, u
		trace = fold(trace, maxOf(u))
	}
	return u, trace
}

// wholeSum is the checksum heat printed when rank 0 gathered the field.
func wholeSum(p params) uint64 {
	field, trace := wholeSerial(p)
	h := fnv.New64a()
	for _, v := range field {
		_ = binary.Write(h, binary.LittleEndian, math.Float64bits(v))
	}
	_ = binary.Write(h, binary.LittleEndian, trace)
	return h.Sum64()
}

// TestGatherAtAnotherSize: after a resize, each new rank's cells are
// exactly those the old ranks saved, whatever the old and new sizes; old
// ranks that saved different steps are refused.
func TestGatherAtAnotherSize(t *testing.T) {
	const cells = 37
	field := make([]float64, cells)
	for i := range field {
		field[i] = float64(i) * 1.5
	}
	saved := func(old int, step func(r int) uint64) func(int) (io.Reader, error) {
		return func(r int) (io.Reader, error) {
			a, b := block(cells, r, old)
			var buf bytes.Buffer
			st := &state{step: step(r), trace: 42, u: field[a:b]}
			return &buf, st.save(&buf)
		}
	}
	same := func(int) uint64 { return 9 }
	for _, old := range []int{1, 3, 4, 8} {
		for _, n := range []int{1, 2, 5, 8} {
			for r := range n {
				lo, hi := block(cells, r, n)
				s := &state{u: make([]float64, hi-lo)}
				if err := s.gather(saved(old, same), cells, lo, old); err != nil {
					t.Fatalf("%d -> %d, rank %d: %v", old, n, r, err)
				}
				if s.step != 9 || s.trace != 42 || !slices.Equal(s.u, field[lo:hi]) {
					t.Fatalf("%d -> %d, rank %d: step %d trace %d cells %v", old, n, r, s.step, s.trace, s.u)
				}
			}
		}
	}
	s := &state{u: make([]float64, cells)}
	if err := s.gather(saved(4, func(r int) uint64 { return uint64(r) }), cells, 0, 4); err == nil {
		t.Fatal("old ranks of different steps gathered")
	}
}
