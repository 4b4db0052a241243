package mpi

import (
	"encoding/binary"
	"unsafe"
)

// Elem is the set of element types messages carry. Every one has a fixed
// size, so a message means the same thing on every machine: on the wire
// elements are little-endian (IEEE 754 for floats).
type Elem interface {
	~uint8 | ~int8 | ~uint16 | ~int16 | ~uint32 | ~int32 | ~uint64 | ~int64 | ~float32 | ~float64
}

// sizeOf is the size in bytes of one T.
func sizeOf[T Elem]() int {
	var z T
	return int(unsafe.Sizeof(z))
}

// nativeLE is true on little-endian machines, where a slice's memory is
// already in wire order and is sent and received in place.
var nativeLE = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// view returns the memory of s as bytes, without copying.
func view[T Elem](s []T) []byte {
	if len(s) == 0 {
		return []byte{}
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*sizeOf[T]())
}

// wireOf returns s in wire order: its own memory on little-endian machines,
// a byte-swapped copy elsewhere.
func wireOf[T Elem](s []T) []byte {
	b := view(s)
	if nativeLE || sizeOf[T]() == 1 {
		return b
	}
	c := append([]byte(nil), b...)
	swap(c, sizeOf[T]())
	return c
}

// fromWire puts b, received in wire order into the memory of a []T, into
// native order.
func fromWire(b []byte, size int) {
	if !nativeLE && size > 1 {
		swap(b, size)
	}
}

// swap reverses the bytes of each size-byte element of b.
func swap(b []byte, size int) {
	for i := 0; i+size <= len(b); i += size {
		e := b[i : i+size]
		for l, r := 0, size-1; l < r; l, r = l+1, r-1 {
			e[l], e[r] = e[r], e[l]
		}
	}
}
