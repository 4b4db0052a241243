package main

import (
	"slices"
	"strings"
	"testing"
)

func TestParseBenchSizes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		all  bool
		want []int
		err  string
	}{
		{in: benchSizes, want: []int{8, 1 << 20, 8 << 20}},
		{in: "8,65536", want: []int{8, 65536}},
		{in: " 64K , 8, 8,", want: []int{8, 64 << 10}},
		{in: "1000", want: []int{1000}},
		{in: "1000,8", want: []int{8, 1000}},                                              // the largest need not be a power of two
		{in: "8,1K", all: true, want: []int{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}}, // every size of the sweep
		{in: "1000,4096", err: "1000 is not measured"},
		{in: "3,8", err: "3 is not measured"},
		{in: "0", err: `"0" is not a size`},
		{in: "2G", err: `"2G" is not a size`},
		{in: "x", err: `"x" is not a size`},
		{in: " , ", err: "no sizes"},
	} {
		got, err := parseBenchSizes(tc.in, tc.all)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parseBenchSizes(%q): %v, %v; want an error containing %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("parseBenchSizes(%q, all %v) = %v, %v; want %v", tc.in, tc.all, got, err, tc.want)
		}
	}
}

// Bad flags are one line on stderr and exit 2, before any agent starts.
func TestBenchUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--rounds", "0"}, "--rounds: must be 1..1000, got 0"},
		{[]string{"--rounds", "x"}, `bench pingpong: invalid value "x" for flag -rounds: parse error (see zorilla bench pingpong --help)`},
		{[]string{"--sizes", "3,8"}, "--sizes: 3 is not measured"},
		{[]string{"--sizes", ""}, "--sizes: no sizes"},
		{[]string{"--raw", "--no-raw"}, "--raw and --no-raw"},
		{[]string{"--timeout", "10ms"}, "--timeout: must be at least 1s"},
		{[]string{"--shm-poll", "2s"}, "--shm-poll: must be 0..1ms, got 2s"},
		{[]string{"--shm-poll", "-1us"}, "--shm-poll: must be 0..1ms, got -1µs"},
		{[]string{"--program", "/nonexistent/prog"}, "program: stat /nonexistent/prog"},
		{[]string{"--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"extra"}, `takes no arguments, got "extra"`},
	} {
		r := zorilla(append([]string{"bench", "pingpong"}, tc.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) || strings.Count(r.stderr, "\n") != 1 || r.stdout != "" {
			t.Errorf("bench pingpong %v: want exit 2 and one line containing %q, got %v", tc.args, tc.want, r)
		}
	}
	for _, args := range [][]string{
		{},
		{"--unix", "/tmp/x.sock"},
		{"--to-unix", "/tmp/x.sock", "--unix", "/tmp/y.sock"},
	} {
		r := zorilla(append([]string{"bench", "relay"}, args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, "give --unix and --to (near relay), or --to-unix (far relay)") {
			t.Errorf("bench relay %v: want exit 2 and what to give, got %v", args, r)
		}
	}
	if r := zorilla("bench", "relay", "--unix", "/tmp/x.sock", "--to", "nowhere"); r.code != 2 ||
		!strings.Contains(r.stderr, `--to "nowhere" is not a multiaddr with /p2p/`) {
		t.Errorf("bench relay --to nowhere: want exit 2, got %v", r)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"echo", "--shm"}, "bench echo: --shm needs --unix"},
		{[]string{"echo", "--unix", "/tmp/x.sock", "--poll", "1us"}, "bench echo: --poll needs --shm"},
		{[]string{"relay", "--to-unix", "/tmp/x.sock", "--shm", "--poll", "1s"}, "bench relay: --poll: must be 0..1ms, got 1s"},
	} {
		if r := zorilla(append([]string{"bench"}, tc.args...)...); r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("bench %v: want exit 2 and %q, got %v", tc.args, tc.want, r)
		}
	}
	if r := zorilla("bench", "bogus"); r.code != 2 || !strings.Contains(r.stderr, `unknown command "bogus"`) {
		t.Errorf("bench bogus: want exit 2, got %v", r)
	}
}
