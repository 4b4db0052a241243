package mpi

// Op combines in into inout element by element: inout[i] = inout[i] op in[i],
// where inout holds the data of lower ranks than in. The reductions (Reduce,
// Allreduce, Scan, Exscan, ReduceScatter) apply it in rank order, as MPI
// requires of an operation that is not commutative (MPI_Op_create with
// commute=false): a user function need only be associative, and the result
// is (...((x0 op x1) op x2) ... op xn-1) up to the grouping. The grouping
// depends on the algorithm, so Sum on floats varies with it in the last
// bits; every rank of Allreduce gets bitwise the same result.
type Op[T Elem] func(inout, in []T)

// Sum adds element-wise.
func Sum[T Elem](inout, in []T) {
	for i := range inout {
		inout[i] += in[i]
	}
}

// Prod multiplies element-wise.
func Prod[T Elem](inout, in []T) {
	for i := range inout {
		inout[i] *= in[i]
	}
}

// Min keeps the element-wise minimum.
func Min[T Elem](inout, in []T) {
	for i := range inout {
		inout[i] = min(inout[i], in[i])
	}
}

// Max keeps the element-wise maximum.
func Max[T Elem](inout, in []T) {
	for i := range inout {
		inout[i] = max(inout[i], in[i])
	}
}
