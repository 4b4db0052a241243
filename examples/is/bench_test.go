package main

import (
	"context"
	"testing"

	"github.com/zorilla-p2p/zorilla/examples/internal/npb"
)

// BenchmarkIterationClassA is one timed IS iteration of class A on one rank.
func BenchmarkIterationClassA(b *testing.B) {
	x := &exchange{c: npb.Solo{}, r: newRanker(classes['A'], 1, 0), totals: make([]int32, 1024+testArraySize)}
	ctx := context.Background()
	it := 0
	for b.Loop() {
		it = it%maxIterations + 1
		if _, _, err := x.iterate(ctx, it); err != nil { // ranks drift after 10 laps
			b.Fatal(err)
		}
	}
}
