package main

import (
	"context"
	"math"
	"testing"
)

func TestClassSVerifiesOnOneRank(t *testing.T) {
	p := classes['S']
	tl := share(t, p, 1, 0)
	ok, ex, ey := p.verify(tl.sx, tl.sy)
	if !ok {
		t.Fatalf("class S: sx=%.15e sy=%.15e, errors %.3g %.3g", tl.sx, tl.sy, ex, ey)
	}
	// The polar method keeps about pi/4 of the pairs; NPB reports 13176389.
	if g := tl.pairs(); g != 13176389 {
		t.Fatalf("class S kept %v pairs, want 13176389", g)
	}
	// NPB's class S counts per annulus.
	if want := [nq]float64{6140517, 5865300, 1100361, 68546, 1648, 17}; tl.q != want {
		t.Fatalf("annulus counts %v, want %v", tl.q, want)
	}
}

func TestSharesAddUpToTheWhole(t *testing.T) {
	// Cut a short class (2^20 pairs, 16 batches) over 1..5 ranks: the
	// counts are exact and the sums agree up to rounding.
	p := params{class: 'T', m: 20}
	whole := share(t, p, 1, 0)
	for size := 2; size <= 5; size++ {
		var sum tally
		for r := range size {
			part := share(t, p, size, r)
			sum = add(sum, part)
		}
		if sum.q != whole.q {
			t.Fatalf("%d ranks: counts %v, one rank %v", size, sum.q, whole.q)
		}
		if relErr(sum.sx, whole.sx) > 1e-12 || relErr(sum.sy, whole.sy) > 1e-12 {
			t.Fatalf("%d ranks: sums %v %v, one rank %v %v", size, sum.sx, sum.sy, whole.sx, whole.sy)
		}
	}
}

func share(t *testing.T, p params, size, rank int) tally {
	t.Helper()
	tl, err := rankShare(context.Background(), p, size, rank)
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

func add(a, b tally) tally {
	v, w := a.vector(), b.vector()
	for i := range v {
		v[i] += w[i]
	}
	return tallyFrom(v)
}

func TestVerifyRejects(t *testing.T) {
	p := classes['A']
	if ok, _, _ := p.verify(p.sx, p.sy); !ok {
		t.Fatal("exact values rejected")
	}
	for _, c := range []struct{ sx, sy float64 }{
		{p.sx * (1 + 2e-8), p.sy},
		{p.sx, p.sy * (1 - 2e-8)},
		{math.NaN(), p.sy},
		{p.sx, math.Inf(1)},
		{0, 0},
	} {
		if ok, _, _ := p.verify(c.sx, c.sy); ok {
			t.Errorf("verify(%v, %v) passed", c.sx, c.sy)
		}
	}
}

func TestParamsFor(t *testing.T) {
	for arg, m := range map[string]int{"S": 24, "w": 25, "A": 28, "B": 30} {
		p, err := paramsFor(arg)
		if err != nil || p.m != m {
			t.Errorf("paramsFor(%q) = %+v, %v", arg, p, err)
		}
	}
	if _, err := paramsFor("C"); err == nil {
		t.Error("class C accepted")
	}
}

func BenchmarkBatch(b *testing.B) {
	x := make([]float64, 2*nk)
	var t tally
	for b.Loop() {
		runBatch(0, x, &t)
	}
}
