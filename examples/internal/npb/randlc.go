package npb

// The generator of the NAS Parallel Benchmarks (NAS report 95-020, section
// 2.3): x_{k+1} = a * x_k mod 2^46, with 0 < x_k < 2^46 odd and a = 5^13,
// returning x_{k+1} / 2^46 in (0, 1). NPB computes it in double precision by
// splitting each 46-bit factor into two 23-bit halves, so that every partial
// product is exact; Randlc does that. Both halves of the split and the
// products fit in 53 bits, so the float computation is exact integer
// arithmetic, and Vranlc computes the same numbers with one 64-bit multiply.

const (
	// A is NPB's multiplier, 5^13, used by every benchmark of the suite.
	A = 1220703125.0

	r23 = 1.0 / (1 << 23) // 2^-23
	r46 = r23 * r23       // 2^-46
	t23 = 1 << 23         // 2^23
	t46 = t23 * t23       // 2^46

	mask46 = 1<<46 - 1
)

// Randlc advances the seed *x by one step of the generator with multiplier
// a and returns the new seed scaled to (0, 1). Both *x and a must be odd
// integers in (0, 2^46) held in float64, as in NPB.
func Randlc(x *float64, a float64) float64 {
	a1 := trunc(r23 * a)
	a2 := a - t23*a1

	x1 := trunc(r23 * *x)
	x2 := *x - t23*x1
	// float64() around each product forbids fusing into an FMA: the split
	// is exact only with every product rounded on its own (they are exact).
	t1 := float64(a1*x2) + float64(a2*x1)
	t2 := trunc(r23 * t1)
	z := t1 - float64(t23*t2)
	t3 := float64(t23*z) + float64(a2*x2)
	t4 := trunc(r46 * t3)
	*x = t3 - float64(t46*t4)
	return r46 * *x
}

// Vranlc fills y[:n] with the next n numbers of the generator with
// multiplier a starting from seed *x, and leaves *x at the last seed, as n
// calls of Randlc would. It panics if y is shorter than n.
func Vranlc(n int, x *float64, a float64, y []float64) {
	y = y[:n]
	s, m := uint64(*x), uint64(a)
	for i := range y {
		s = s * m & mask46 // the low 46 bits of the product survive wrap-around
		y[i] = r46 * float64(s)
	}
	*x = float64(s)
}

// Skip returns the seed n steps after seed s for multiplier a, that is
// s * a^n mod 2^46, by binary powering in O(log n) generator steps. This is
// how NPB hands each rank its own stretch of one global sequence
// (find_my_seed in IS, the batch seeds in EP). n must be >= 0.
func Skip(s, a float64, n int64) float64 {
	t1, t2 := s, a
	for k := n; k > 0; k /= 2 {
		if k%2 == 1 {
			Randlc(&t1, t2)
		}
		if k > 1 {
			Randlc(&t2, t2)
		}
	}
	return t1
}

// trunc is C's conversion of a non-negative double to int and back.
func trunc(v float64) float64 { return float64(int64(v)) }
