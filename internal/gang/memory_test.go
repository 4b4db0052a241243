package gang

import (
	"math"
	"reflect"
	"testing"
)

const gib = 1 << 30

func TestFits(t *testing.T) {
	cases := []struct {
		name string
		lend int64
		mems []int64
		want bool
	}{
		{"no bound", 0, []int64{100 * gib}, true},
		{"nothing", gib, nil, true},
		{"exactly", 2 * gib, []int64{gib, gib}, true},
		{"one byte over", 2 * gib, []int64{gib, gib + 1}, false},
		{"two fit, three do not", 5 * gib, []int64{2 * gib, 2 * gib, 2 * gib}, false},
		{"unknown counts nothing", gib, []int64{-1, gib}, true},
		{"no overflow", math.MaxInt64, []int64{math.MaxInt64, math.MaxInt64}, false},
	}
	for _, tc := range cases {
		if got := Fits(tc.lend, tc.mems...); got != tc.want {
			t.Errorf("%s: Fits(%d, %v) = %v, want %v", tc.name, tc.lend, tc.mems, got, tc.want)
		}
	}
}

func TestSwapSets(t *testing.T) {
	cases := []struct {
		name string
		lend int64
		mems []int64
		want [][]int
	}{
		{"all fit", 6 * gib, []int64{2 * gib, 2 * gib, 2 * gib}, [][]int{{0, 1, 2}}},
		{"two fit, three do not", 5 * gib, []int64{2 * gib, 2 * gib, 2 * gib}, [][]int{{0, 1}, {2}}},
		{"one each", 2 * gib, []int64{2 * gib, 2 * gib}, [][]int{{0}, {1}}},
		{"first fit keeps order", 4 * gib, []int64{3 * gib, 2 * gib, gib}, [][]int{{0, 2}, {1}}},
		{"too big alone", gib, []int64{2 * gib, gib / 2}, [][]int{{0}, {1}}},
		{"none", gib, nil, nil},
	}
	for _, tc := range cases {
		if got := SwapSets(tc.lend, tc.mems); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: SwapSets(%d, %v) = %v, want %v", tc.name, tc.lend, tc.mems, got, tc.want)
		}
	}
}

func TestSwitchPlan(t *testing.T) {
	seq := SwitchPlan(Sequential)
	if !reflect.DeepEqual(seq, [][]Step{{CheckpointOut}, {AwaitOutEnded}, {RestartIn}}) {
		t.Errorf("sequential = %v", seq)
	}
	ov := SwitchPlan(Overlapped)
	if !reflect.DeepEqual(ov, [][]Step{{CheckpointOut, RestartIn}, {AwaitOutEnded}}) {
		t.Errorf("overlapped = %v", ov)
	}
	for _, s := range []string{"", "sequential", "overlapped"} {
		if _, err := ParsePolicy(s); err != nil {
			t.Errorf("ParsePolicy(%q): %v", s, err)
		}
	}
	if _, err := ParsePolicy("predictive"); err == nil {
		t.Error("ParsePolicy(predictive) = nil error")
	}
}
