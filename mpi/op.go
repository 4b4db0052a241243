package mpi

// Op combines in into inout element by element: inout[i] = inout[i] op in[i].
// Reduce and Allreduce apply it along a tree in an order that depends on the
// algorithm, so a user function must be associative and commutative (as
// MPI_Op_create with commute=true); Sum on floats is, up to rounding, and
// every rank of Allreduce gets bitwise the same result.
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
