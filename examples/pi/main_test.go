package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/examples/internal/npb"
	"github.com/zorilla-p2p/zorilla/examples/internal/npb/npbtest"
)

// The shares of every rank add up to the one-rank sum, and the midpoint
// rule's error falls as 1/n² (about h²/24·|f'(1)-f'(0)| = h²/12 here, with
// f(x) = 4/(1+x²)).
func TestPartialSumsAddUpToPi(t *testing.T) {
	for _, n := range []int64{1, 7, 1000, 100000} {
		whole := partialSum(n, 0, 1)
		for _, size := range []int{2, 3, 8, 13} {
			var s float64
			for r := range size {
				s += partialSum(n, r, size)
			}
			if math.Abs(s-whole) > 1e-12 {
				t.Errorf("n=%d size=%d: shares add to %.15f, one rank gives %.15f", n, size, s, whole)
			}
		}
		h := 1 / float64(n)
		if err, bound := whole-math.Pi, h*h/12*1.01+1e-14; math.Abs(err) > bound {
			t.Errorf("n=%d: error %.3e exceeds %.3e", n, err, bound)
		}
	}
	if got := partialSum(1, 0, 1); got != 4/(1+0.25) {
		t.Errorf("one strip: %v, want 3.2", got)
	}
	if got := partialSum(3, 5, 8); got != 0 {
		t.Errorf("a rank with no strip: %v, want 0", got)
	}
}

// On 6 ranks over 3 agents, Reduce brings the sum to rank 0, which prints
// π to 1e-10; every rank prints where it is and its share.
func TestPiOnSixRanks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const size, n = 6, 100000
	out := make([]bytes.Buffer, size)
	err := npbtest.Run(ctx, 3, size, func(c npb.Comm) error {
		return run(c.(npb.World).C, n, "box", fmt.Sprint("a", c.Rank()), &out[c.Rank()])
	})
	if err != nil {
		t.Fatal(err)
	}
	for r := range size {
		want := fmt.Sprintf("rank %d of %d on box (agent a%d): partial sum %.12f\n", r, size, r, partialSum(n, r, size))
		if !strings.HasPrefix(out[r].String(), want) {
			t.Errorf("rank %d printed %q, want it to start with %q", r, out[r].String(), want)
		}
	}
	m := regexp.MustCompile(`pi is approximately (\S+), error`).FindStringSubmatch(out[0].String())
	if m == nil {
		t.Fatalf("rank 0 printed no result:\n%s", out[0].String())
	}
	if v, _ := strconv.ParseFloat(m[1], 64); math.Abs(v-math.Pi) > 1e-10 {
		t.Fatalf("pi = %v", v)
	}
	for r := 1; r < size; r++ {
		if strings.Contains(out[r].String(), "approximately") {
			t.Errorf("rank %d printed the result too", r)
		}
	}
}

func TestParseArgs(t *testing.T) {
	for _, c := range []struct {
		args []string
		want int64
		bad  bool
	}{
		{nil, defaultIntervals, false},
		{[]string{"1000"}, 1000, false},
		{[]string{"0"}, 0, true},
		{[]string{"-5"}, 0, true},
		{[]string{"ten"}, 0, true},
		{[]string{"1", "2"}, 0, true},
		{[]string{"9999999999999999"}, 0, true},
	} {
		got, err := parseArgs(c.args)
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("parseArgs(%q) = %d, %v", c.args, got, err)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := realMain([]string{"x"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "usage") {
		t.Errorf("bad argument: exit %d, stderr %q", code, stderr.String())
	}
}
