package bench

import (
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestRank0Figures(t *testing.T) {
	// The tagged output of examples/pingpong 65536 submitted on two agents,
	// with the demo's summary after it.
	real, err := os.ReadFile(filepath.Join("testdata", "pingpong-job.txt"))
	if err != nil {
		t.Fatal(err)
	}
	figs, err := rank0Figures(string(real))
	if err != nil {
		t.Fatal(err)
	}
	if len(figs) != 17 || figs[8] != (figure{108.77, 0.07}) || figs[65536] != (figure{254.61, 257.40}) {
		t.Errorf("figures of the captured run: %d sizes, 8 B %v, 64 KiB %v", len(figs), figs[8], figs[65536])
	}
	for _, tc := range []struct{ name, in, err string }{
		{"no rank 0 lines", "[1] hello\n", "no rows"},
		{"rank 0 says something else", "[0] hello world\n", `"hello world"`},
	} {
		if _, err := rank0Figures(tc.in); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: err %v, want one containing %q", tc.name, err, tc.err)
		}
	}
}

func TestParseNetpipe(t *testing.T) {
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tc := range []struct {
		name string
		out  []byte
		size int
		want figure
		err  string
	}{
		{"NPtcp -l 8 -u 8 -p 0", read("nptcp-8.out"), 8, figure{34.99, 8 / 34.99}, ""},
		{"NPmpi -l 1M -u 1M -p 0", read("npmpi-1048576.out"), 1 << 20, figure{182.48, 1048576 / 182.48}, ""},
		{"NPtcp sweep 1..64K with perturbations", read("nptcp-sweep.out"), 4096, figure{35.48, 4096 / 35.48}, ""},
		{"size not measured", read("nptcp-8.out"), 16, figure{}, "no line for 16 bytes"},
		{"empty", nil, 8, figure{}, "no line for 8 bytes"},
		{"time zero", []byte("8 0 0.0\n"), 8, figure{}, `time "0.0"`},
		{"time garbage", []byte("8 17.4 x\n"), 8, figure{}, `time "x"`},
	} {
		got, err := parseNetpipe(tc.out, tc.size)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %v, %v; want an error containing %q", tc.name, got, err, tc.err)
			}
			continue
		}
		if err != nil || !near(got.latencyUS, tc.want.latencyUS) || !near(got.mbps, tc.want.mbps) {
			t.Errorf("%s: %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
}

func TestNetpipeTargets(t *testing.T) {
	for _, tc := range []struct {
		name           string
		path           []string
		found, missing []string
	}{
		{"none", nil, nil, []string{"NetPIPE TCP", "NetPIPE MPI"}},
		{"all", []string{"NPtcp", "NPmpi", "mpirun"}, []string{"NetPIPE TCP", "NetPIPE MPI"}, nil},
		{"Debian's NPopenmpi", []string{"NPopenmpi", "mpirun"}, []string{"NetPIPE MPI"}, []string{"NetPIPE TCP"}},
		{"NPmpi without mpirun", []string{"NPtcp", "NPmpi"}, []string{"NetPIPE TCP"}, []string{"NetPIPE MPI"}},
	} {
		targets, missing := netpipeTargets(t.TempDir(), on(tc.path...))
		var found, absent []string
		for _, tg := range targets {
			found = append(found, tg.name())
		}
		for _, s := range missing {
			absent = append(absent, s.name)
			if !strings.HasPrefix(s.note, "not installed") {
				t.Errorf("%s: %s's note %q", tc.name, s.name, s.note)
			}
		}
		if !slices.Equal(found, tc.found) || !slices.Equal(absent, tc.missing) {
			t.Errorf("%s: found %v, missing %v; want %v, %v", tc.name, found, absent, tc.found, tc.missing)
		}
	}
}

func TestMedian(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{1, nan, 5, 3}, 3},
		{[]float64{100, 1, 2}, 2}, // one slow round does not move it
	} {
		if got := median(tc.in); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
	if got := median(nil); !math.IsNaN(got) {
		t.Errorf("median(nil) = %v, want NaN", got)
	}
	if got := median([]float64{nan}); !math.IsNaN(got) {
		t.Errorf("median(NaN) = %v, want NaN", got)
	}
}

// The ratios are taken round by round, then their median: a machine that
// is slow in one round is slow for both configurations of that round.
func TestRowRatiosPerRound(t *testing.T) {
	z := &series{name: "zorilla", rounds: []map[int]figure{
		{8: {20, 1}}, {8: {40, 0.5}}, {8: {30, 0.6}}, // a fast, a slow and a middle round
	}}
	raw := &series{name: "raw", rounds: []map[int]figure{
		{8: {10, 2}}, {8: {20, 1}}, {8: {10, 2}},
	}}
	for _, tc := range []struct {
		name string
		s    *series
		want benchRow
	}{
		{"zorilla: medians, no ratio", z, benchRow{latencyUS: 30, mbps: 0.6, latRatio: math.NaN(), bwRatio: math.NaN(), n: 3}},
		// latency ratios 2, 2, 3; bandwidth ratios 0.5, 0.5, 0.3
		{"raw: medians of the per-round ratios", raw, benchRow{latencyUS: 10, mbps: 2, latRatio: 2, bwRatio: 0.5, n: 3}},
	} {
		if got := row(tc.s, z, 8); !sameRow(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
	// A round where one side has no figure gives no ratio.
	partial := &series{name: "npmpi", rounds: []map[int]figure{nil, {8: {5, 4}}}}
	if got := row(partial, z, 8); !sameRow(got, benchRow{latencyUS: 5, mbps: 4, latRatio: 8, bwRatio: 0.125, n: 1}) {
		t.Errorf("partial series: %+v", got)
	}
}

func TestWriteBenchTable(t *testing.T) {
	res := &Results{Rounds: 2, series: []*series{
		{name: "zorilla", rounds: []map[int]figure{{8: {30, 0.27}, 1 << 20: {2000, 524.29}}, {8: {50, 0.16}, 1 << 20: {3000, 349.53}}}},
		{name: "raw libp2p", rounds: []map[int]figure{{8: {20, 0.4}, 1 << 20: {1000, 1048.58}}, {8: {25, 0.32}, 1 << 20: {1500, 699.06}}}},
		{name: "NetPIPE MPI", rounds: []map[int]figure{{8: {5, 1.6}}}, note: "failed (its error is on stderr)"},
		{name: "NetPIPE TCP", note: "not installed (NPtcp: apt-get install netpipe-tcp)"},
	}}
	var b strings.Builder
	WriteTable(&b, res, []int{8, 1 << 20})
	want := `ping-pong on loopback: medians of 2 rounds; ratios: zorilla / the configuration, per round, median
    SIZE  CONFIG         LATENCY_US       MB/S  LAT_RATIO   BW_RATIO
     8 B  zorilla             40.00       0.22          -          -
     8 B  raw libp2p          22.50       0.36      1.75x      0.59x
     8 B  NetPIPE MPI          5.00       1.60      6.00x      0.17x  (1 of 2 rounds)
     8 B  NetPIPE TCP  not installed (NPtcp: apt-get install netpipe-tcp)
   1 MiB  zorilla           2500.00     436.91          -          -
   1 MiB  raw libp2p        1250.00     873.82      2.00x      0.50x
   1 MiB  NetPIPE MPI  failed (its error is on stderr)
   1 MiB  NetPIPE TCP  not installed (NPtcp: apt-get install netpipe-tcp)
`
	if got := b.String(); got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
}

func TestSizeLabel(t *testing.T) {
	for n, want := range map[int]string{1: "1 B", 8: "8 B", 1000: "1000 B", 1024: "1 KiB", 1536: "1536 B", 64 << 10: "64 KiB", 8 << 20: "8 MiB", 1 << 30: "1 GiB"} {
		if got := sizeLabel(n); got != want {
			t.Errorf("sizeLabel(%d) = %q, want %q", n, got, want)
		}
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }

func sameRow(a, b benchRow) bool {
	same := func(x, y float64) bool { return (math.IsNaN(x) && math.IsNaN(y)) || near(x, y) }
	return a.n == b.n && same(a.latencyUS, b.latencyUS) && same(a.mbps, b.mbps) &&
		same(a.latRatio, b.latRatio) && same(a.bwRatio, b.bwRatio)
}

// The raw stream's ping-pong against its echo, over an in-memory pipe:
// every size of the sweep comes back, and the echo ends cleanly when the
// dialer closes between two sizes, or with an error on a bad header.
func TestSweepEcho(t *testing.T) {
	client, server := net.Pipe()
	done := make(chan error, 1)
	go func() { done <- echoLoop(server) }()
	results, err := sweep(client, 4)
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int
	for _, r := range results {
		sizes = append(sizes, r.Size)
		if r.Reps < 1 || r.Took <= 0 {
			t.Errorf("size %d: %d round trips in %v", r.Size, r.Reps, r.Took)
		}
	}
	if !slices.Equal(sizes, []int{1, 2, 4}) {
		t.Errorf("sizes %v, want 1, 2, 4", sizes)
	}
	client.Close()
	if err := <-done; err != nil {
		t.Errorf("echo after the dialer closed: %v", err)
	}

	for _, hdr := range [][]byte{
		{0, 0, 0, 0, 0, 0, 0, 1},       // size 0
		{0, 0, 0, 8, 0, 0, 0, 0},       // no round trips
		{0x40, 0, 0, 1, 0, 0, 0, 1},    // over 1 GiB
		{0, 0, 0, 8, 0x10, 0, 0, 0, 0}, // too many round trips
	} {
		client, server := net.Pipe()
		go func() { done <- echoLoop(server) }()
		_, _ = client.Write(hdr[:echoHeaderLen])
		if err := <-done; err == nil || !strings.Contains(err.Error(), "header asks for") {
			t.Errorf("header %x: %v, want a refusal", hdr, err)
		}
		client.Close()
	}
}
