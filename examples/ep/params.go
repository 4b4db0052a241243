package main

import (
	"fmt"

	"github.com/zorilla-p2p/zorilla/examples/internal/npb"
)

const (
	// mk is log2 of the number of pairs per batch. NPB fixes it at 16; it
	// does not change the results, only the size of the scratch buffer.
	mk = 16
	nk = 1 << mk
	// nq is the number of square annuli the Gaussian pairs are counted in.
	nq = 10
	// seed is EP's starting seed (NPB's s).
	seed = 271828183.0
	// epsilon is NPB's bound on the relative error of sx and sy.
	epsilon = 1e-8
)

// params is one EP problem class: 2^m pairs of uniform numbers, and NPB
// 3.4's verification values for the sums of the Gaussian deviates.
type params struct {
	class  npb.Class
	m      int
	sx, sy float64
}

// classes are NPB 3.4's EP classes S, W, A and B.
var classes = map[npb.Class]params{
	'S': {class: 'S', m: 24, sx: -3.247834652034740e3, sy: -6.958407078382297e3},
	'W': {class: 'W', m: 25, sx: -2.863319731645753e3, sy: -6.320053679109499e3},
	'A': {class: 'A', m: 28, sx: -4.295875165629892e3, sy: -1.580732573678431e4},
	'B': {class: 'B', m: 30, sx: 4.033815542441498e4, sy: -2.660669192809235e4},
}

// knownClasses lists the keys of classes for npb.ParseClass.
const knownClasses = "SWAB"

// paramsFor parses a class letter.
func paramsFor(arg string) (params, error) {
	c, err := npb.ParseClass(arg, knownClasses)
	if err != nil {
		return params{}, err
	}
	return classes[c], nil
}

// batches is the number of batches of nk pairs in the class: 2^(m-mk).
func (p params) batches() int64 { return 1 << (p.m - mk) }

// size is the count of uniform random numbers generated, 2^(m+1), which
// NPB prints as the problem size and counts as operations.
func (p params) size() float64 { return float64(int64(1) << (p.m + 1)) }

// verify checks the sums against NPB's values with relative error at most
// epsilon. It returns the relative errors too. A NaN sum fails.
func (p params) verify(sx, sy float64) (ok bool, ex, ey float64) {
	ex = relErr(sx, p.sx)
	ey = relErr(sy, p.sy)
	return ex <= epsilon && ey <= epsilon, ex, ey // false when either is NaN
}

func relErr(got, want float64) float64 {
	d := (got - want) / want
	if d < 0 {
		return -d
	}
	return d
}

func (p params) String() string { return fmt.Sprintf("EP class %v (M=%d)", p.class, p.m) }
