package gang

import (
	"errors"
	"testing"
	"time"
)

func at(ms int64) time.Time { return time.Unix(0, ms*int64(time.Millisecond)) }

func TestSlotAndCurrent(t *testing.T) {
	c := Config{Slice: 100 * time.Millisecond, Columns: 3}
	cases := []struct {
		ms         int64
		slot       int64
		col        int
		nextSwitch int64
	}{
		{0, 0, 0, 100},
		{99, 0, 0, 100},
		{100, 1, 1, 200},
		{250, 2, 2, 300},
		{300, 3, 0, 400},
		{-1, -1, 2, 0}, // before the epoch: still a whole slice, column in range
		{-100, -1, 2, 0},
		{-101, -2, 1, -100},
	}
	for _, tc := range cases {
		now := at(tc.ms)
		if got := c.Slot(now); got != tc.slot {
			t.Errorf("Slot(%dms) = %d, want %d", tc.ms, got, tc.slot)
		}
		if got := c.Current(now); got != tc.col {
			t.Errorf("Current(%dms) = %d, want %d", tc.ms, got, tc.col)
		}
		if got := c.NextSwitch(now); !got.Equal(at(tc.nextSwitch)) {
			t.Errorf("NextSwitch(%dms) = %v, want %dms", tc.ms, got.UnixMilli(), tc.nextSwitch)
		}
	}
}

func TestRunnable(t *testing.T) {
	c := Config{Slice: 100 * time.Millisecond, Columns: 4}
	cases := []struct {
		name     string
		ms       int64 // column = (ms/100) % 4
		col      int
		occupied []int
		want     bool
	}{
		{"alone never frozen", 100, 0, []int{0}, true},
		{"alone, other slice", 300, 2, []int{2}, true},
		{"no column always runs", 100, NoColumn, []int{0, 1, NoColumn}, true},
		{"own slice", 100, 1, []int{0, 1}, true},
		{"other job's slice", 0, 1, []int{0, 1}, false},
		{"free slice: all run", 200, 1, []int{0, 1}, true},
		{"free slice: the other too", 300, 0, []int{0, 1}, true},
		{"three jobs, third's slice", 200, 0, []int{0, 1, 2}, false},
		{"three jobs, own", 200, 2, []int{0, 1, 2}, true},
		{"shared column runs together", 0, 0, []int{0, 0, 1}, true},
		{"only no-column others", 100, 0, []int{0, NoColumn}, true},
		{"next round", 500, 1, []int{0, 1, 2, 3}, true},
		{"next round, not own", 500, 0, []int{0, 1, 2, 3}, false},
	}
	for _, tc := range cases {
		if got := c.Runnable(at(tc.ms), tc.col, tc.occupied); got != tc.want {
			t.Errorf("%s: Runnable(%dms, col %d, %v) = %v, want %v", tc.name, tc.ms, tc.col, tc.occupied, got, tc.want)
		}
	}
}

// In every slice, of the jobs sharing a host exactly one holds it, or all
// run when it is free: two gang-scheduled jobs never run at once.
func TestRunnableExclusive(t *testing.T) {
	c := Config{Slice: 10 * time.Millisecond, Columns: 3}
	occupied := []int{0, 1, 2}
	for ms := int64(0); ms < 200; ms++ {
		n := 0
		for _, col := range occupied {
			if c.Runnable(at(ms), col, occupied) {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("at %dms %d jobs runnable, want 1", ms, n)
		}
	}
}

func TestFreeColumns(t *testing.T) {
	cases := []struct {
		cols     int
		occupied []int
		want     uint64
	}{
		{4, nil, 0b1111},
		{4, []int{0, 2}, 0b1010},
		{4, []int{NoColumn, 7, 3}, 0b0111}, // out of range ignored
		{64, nil, ^uint64(0)},
		{64, []int{63}, ^uint64(0) >> 1},
	}
	for _, tc := range cases {
		c := Config{Slice: time.Second, Columns: tc.cols}
		if got := c.FreeColumns(tc.occupied); got != tc.want {
			t.Errorf("FreeColumns(M=%d, %v) = %b, want %b", tc.cols, tc.occupied, got, tc.want)
		}
	}
}

func TestPickColumn(t *testing.T) {
	cases := []struct {
		name    string
		free    []uint64
		want    int
		noMatch bool
	}{
		{"empty hosts", []uint64{0b1111, 0b1111}, 0, false},
		{"lowest common", []uint64{0b1110, 0b1100, 0b1101}, 2, false},
		{"no hosts", nil, 0, false},
		{"none common: most hosts", []uint64{0b0001, 0b0010, 0b0010}, 1, true},
		{"none free at all", []uint64{0, 0}, 0, true},
	}
	for _, tc := range cases {
		got, err := PickColumn(tc.free)
		if got != tc.want || errors.Is(err, ErrNoCommonColumn) != tc.noMatch {
			t.Errorf("%s: PickColumn(%b) = %d, %v; want %d, no common %v", tc.name, tc.free, got, err, tc.want, tc.noMatch)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{{Slice: 0, Columns: 2}, {Slice: time.Second, Columns: 0}, {Slice: time.Second, Columns: 65}} {
		if c.Validate() == nil {
			t.Errorf("Validate(%+v) = nil, want an error", c)
		}
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
}
