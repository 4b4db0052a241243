package job

import (
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/job/proto"
)

// TestAddFile: a checkpoint is complete exactly when every rank's file is
// in, whatever the order they come in; a file sent again replaces the
// rank's; checkpoints stay sorted by number.
func TestAddFile(t *testing.T) {
	now := time.Unix(0, 0)
	type add struct {
		num  uint64
		rank int
	}
	for _, tc := range []struct {
		name     string
		adds     []add
		complete []uint64
		nums     []uint64
	}{
		{"none complete", []add{{1, 0}, {1, 2}}, nil, []uint64{1}},
		{"in order", []add{{1, 0}, {1, 1}, {1, 2}}, []uint64{1}, []uint64{1}},
		{"any order", []add{{1, 2}, {1, 0}, {1, 1}}, []uint64{1}, []uint64{1}},
		{"a rank twice", []add{{1, 0}, {1, 0}, {1, 1}}, nil, []uint64{1}},
		{"two interleaved", []add{{2, 0}, {1, 0}, {2, 1}, {1, 1}, {2, 2}}, []uint64{2}, []uint64{1, 2}},
		{"another run's number", []add{{1, 0}, {1, 1}, {1, -1}, {1, 2}}, nil, []uint64{1}},
	} {
		var cps []Checkpoint
		attempt := 1
		for _, a := range tc.adds {
			if a.rank < 0 { // the next files come from the next run
				attempt++
				continue
			}
			cps = AddCheckpointFile(cps, a.num, attempt, 3, CheckpointFile{Rank: a.rank, Size: 1}, now, now)
		}
		var complete, nums []uint64
		for _, c := range cps {
			nums = append(nums, c.Num)
			if c.Complete {
				complete = append(complete, c.Num)
			}
		}
		if !equalNums(complete, tc.complete) || !equalNums(nums, tc.nums) {
			t.Errorf("%s: checkpoints %v complete %v, want %v complete %v", tc.name, nums, complete, tc.nums, tc.complete)
		}
	}
}

func equalNums(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestKeep: once a checkpoint is complete, the older ones go (complete or
// not) and the newer ones still arriving stay; with none complete nothing
// goes.
func TestKeep(t *testing.T) {
	c := func(num uint64, complete bool) Checkpoint { return Checkpoint{Num: num, Complete: complete} }
	for _, tc := range []struct {
		in         []Checkpoint
		kept, gone []uint64
	}{
		{nil, nil, nil},
		{[]Checkpoint{c(1, false), c(2, false)}, []uint64{1, 2}, nil},
		{[]Checkpoint{c(1, true), c(2, false)}, []uint64{1, 2}, nil},
		{[]Checkpoint{c(1, true), c(2, true)}, []uint64{2}, []uint64{1}},
		{[]Checkpoint{c(1, false), c(2, true), c(3, false)}, []uint64{2, 3}, []uint64{1}},
	} {
		kept, gone := KeepCheckpoints(tc.in)
		if !equalNums(nums(kept), tc.kept) || !equalNums(nums(gone), tc.gone) {
			t.Errorf("KeepCheckpoints(%v) = %v, %v; want %v, %v", nums(tc.in), nums(kept), nums(gone), tc.kept, tc.gone)
		}
	}
}

func nums(cps []Checkpoint) []uint64 {
	var out []uint64
	for _, c := range cps {
		out = append(out, c.Num)
	}
	return out
}

// TestRestores: each of a host's ranks gets its own file of the
// checkpoint, under the library's name, and a rank without one gets none.
func TestRestores(t *testing.T) {
	cp := Checkpoint{Num: 7, Files: []CheckpointFile{{Rank: 0, Hash: "a", Size: 1}, {Rank: 1, Hash: "b", Size: 2}}}
	got := Restores(cp, []proto.Proc{{Rank: 1}, {Rank: 5}}, "")
	if len(got) != 1 || got[0].Rank != 1 || got[0].Num != 7 || got[0].File != (proto.FileRef{Name: "ckpt-7.rank-1", Hash: "b", Size: 2}) {
		t.Fatalf("restores = %+v", got)
	}
}

// TestCheckpointEveryInJobFile: checkpoint_every is read from a job file,
// written back, and refused when negative.
func TestCheckpointEveryInJobFile(t *testing.T) {
	d, err := DecodeDescription([]byte("executable: heat\nnodes: 2\ncheckpoint_every: 10s\n"))
	if err != nil || d.CheckpointEvery != 10*time.Second {
		t.Fatalf("decoded %v, %v", d.CheckpointEvery, err)
	}
	b, err := d.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if back, err := DecodeDescription(b); err != nil || back.CheckpointEvery != d.CheckpointEvery {
		t.Fatalf("round trip: %v, %v", back.CheckpointEvery, err)
	}
	if _, err := DecodeDescription([]byte("executable: heat\nnodes: 2\ncheckpoint_every: -10s\n")); err == nil {
		t.Fatal("a negative interval was accepted")
	}
}
