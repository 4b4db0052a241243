package pingpong

import (
	"bytes"
	"errors"
	"math"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSizes(t *testing.T) {
	for _, tc := range []struct {
		max  int
		want []int
	}{
		{1, []int{1}},
		{2, []int{1, 2}},
		{8, []int{1, 2, 4, 8}},
		{10, []int{1, 2, 4, 8, 10}},
	} {
		if got := Sizes(tc.max); !slices.Equal(got, tc.want) {
			t.Errorf("Sizes(%d) = %v, want %v", tc.max, got, tc.want)
		}
	}
	if got := Sizes(8 << 20); len(got) != 24 || got[23] != 8<<20 {
		t.Errorf("Sizes(8 MiB): %d sizes ending %d, want 24 ending 8 MiB", len(got), got[len(got)-1])
	}
}

func TestNextReps(t *testing.T) {
	for _, tc := range []struct {
		name string
		reps int64
		took time.Duration
		want int64
	}{
		{"100µs a round trip: twice that next, PerTrial/200µs", 100, 10 * time.Millisecond, 500},
		{"slow size keeps the floor", 4, 10 * time.Second, minReps},
		{"very fast size stops at the cap", 1 << 20, time.Microsecond, maxReps},
		{"no time measured doubles", 16, 0, 32},
		{"no time measured stays under the cap", maxReps, 0, maxReps},
	} {
		if got := NextReps(tc.reps, tc.took); got != tc.want {
			t.Errorf("%s: NextReps(%d, %v) = %d, want %d", tc.name, tc.reps, tc.took, got, tc.want)
		}
	}
}

func TestResult(t *testing.T) {
	for _, tc := range []struct {
		r       Result
		latency float64
		mbps    float64
	}{
		{Result{Size: 8, Reps: 100, Took: 2 * time.Millisecond}, 10, 0.8},            // 10 µs one way
		{Result{Size: 1 << 20, Reps: 4, Took: 8 * time.Millisecond}, 1000, 1048.576}, // 1 ms one way
		{Result{Size: 8}, 0, 0},
	} {
		if got := tc.r.LatencyMicros(); got != tc.latency {
			t.Errorf("%+v: latency %v µs, want %v", tc.r, got, tc.latency)
		}
		if got := tc.r.MBps(); math.Abs(got-tc.mbps) > 1e-9 {
			t.Errorf("%+v: %v MB/s, want %v", tc.r, got, tc.mbps)
		}
	}
}

// A table written by WriteHeader and WriteRow reads back as written.
func TestTableRoundTrip(t *testing.T) {
	rows := []Row{{1, 16, 123.44, 0.01}, {8388608, 4, 21765.11, 385.42}}
	var b bytes.Buffer
	if err := WriteHeader(&b); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if err := WriteRow(&b, r); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ParseTable(&b)
	if err != nil || !slices.Equal(got, rows) {
		t.Fatalf("ParseTable = %v, %v; want %v", got, err, rows)
	}
}

func TestParseTable(t *testing.T) {
	// The first lines rank 0 of examples/pingpong printed on two agents.
	const real = `       bytes     rounds     latency_us         MB/s
           1         16         123.44         0.01
           2        202         101.72         0.02
`
	for _, tc := range []struct {
		name, in string
		want     []Row
		err      string
	}{
		{"real output", real, []Row{{1, 16, 123.44, 0.01}, {2, 202, 101.72, 0.02}}, ""},
		{"blank lines skipped", "\n" + real + "\n\n", []Row{{1, 16, 123.44, 0.01}, {2, 202, 101.72, 0.02}}, ""},
		{"no header needed", "8 4 10.5 0.76\n", []Row{{8, 4, 10.5, 0.76}}, ""},
		{"empty", "", nil, "no rows"},
		{"header only", "bytes rounds latency_us MB/s\n", nil, "no rows"},
		{"a stray line", real + "pingpong: done\n", nil, `line 4 "pingpong: done": want 4 columns`},
		{"size zero", "0 4 10.5 0.76\n", nil, "bytes"},
		{"rounds not a number", "8 x 10.5 0.76\n", nil, "rounds"},
		{"latency zero", "8 4 0 0.76\n", nil, "latency_us"},
		{"latency NaN", "8 4 NaN 0.76\n", nil, "latency_us"},
		{"bandwidth infinite", "8 4 1 +Inf\n", nil, "MB/s"},
	} {
		got, err := ParseTable(strings.NewReader(tc.in))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v, want one containing %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}

// TestPingpongNoLibp2p: examples/pingpong, a user program, links this
// package and the mpi library, and neither pulls in libp2p.
func TestPingpongNoLibp2p(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/zorilla-p2p/zorilla/examples/pingpong").CombinedOutput()
	if err != nil {
		t.Skipf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.Contains(dep, "libp2p") || strings.Contains(dep, "multiformats") {
			t.Errorf("examples/pingpong depends on %s", dep)
		}
	}
}

// TestBest: the fastest of Trials trials, each run once; an error ends
// the trials at once.
func TestBest(t *testing.T) {
	var runs int
	times := []time.Duration{3 * time.Millisecond, time.Millisecond, 2 * time.Millisecond}
	best, err := Best(func() (time.Duration, error) {
		d := times[runs%len(times)]
		runs++
		return d, nil
	})
	if err != nil || best != time.Millisecond || runs != Trials {
		t.Errorf("Best = %v, %v after %d trials; want 1ms, nil after %d", best, err, runs, Trials)
	}
	runs = 0
	boom := errors.New("boom")
	if _, err := Best(func() (time.Duration, error) { runs++; return 0, boom }); err != boom || runs != 1 {
		t.Errorf("Best with a failing trial: %v after %d trials, want boom after 1", err, runs)
	}
}
