package npb

import (
	"context"
	"errors"
	"slices"
	"testing"
)

func TestSolo(t *testing.T) {
	ctx := context.Background()
	var s Solo
	if s.Rank() != 0 || s.Size() != 1 || s.Barrier(ctx) != nil {
		t.Fatal("solo is not rank 0 of 1")
	}
	v := []int32{3, 4}
	if err := s.AllreduceSumInt32(ctx, v); err != nil || !slices.Equal(v, []int32{3, 4}) {
		t.Fatalf("sum over one rank changed %v (%v)", v, err)
	}
	recv := make([]int32, 1)
	if err := s.Alltoall(ctx, []int32{7}, recv); err != nil || recv[0] != 7 {
		t.Fatalf("alltoall: %v %v", recv, err)
	}
	if err := s.Alltoall(ctx, []int32{7, 8}, recv); !errors.Is(err, ErrSolo) {
		t.Fatalf("alltoall of two values: %v", err)
	}
	out := make([]int32, 4)
	if err := s.Alltoallv(ctx, []int32{9, 1, 2, 9}, []int{2}, []int{1}, out, []int{2}, []int{2}); err != nil ||
		!slices.Equal(out, []int32{0, 0, 1, 2}) {
		t.Fatalf("alltoallv: %v %v", out, err)
	}
	if err := s.Alltoallv(ctx, nil, []int{1}, []int{0}, out, []int{2}, []int{0}); !errors.Is(err, ErrSolo) {
		t.Fatalf("alltoallv with mismatched counts: %v", err)
	}
	if s.SendInt32(ctx, 1, 0, v) == nil || s.RecvInt32(ctx, 1, 0, v) == nil {
		t.Fatal("point-to-point on one rank succeeded")
	}
	ctx2, cancel := context.WithCancel(ctx)
	cancel()
	if s.Barrier(ctx2) == nil || s.AllreduceMaxFloat64(ctx2, nil) == nil {
		t.Fatal("cancelled context ignored")
	}
}
