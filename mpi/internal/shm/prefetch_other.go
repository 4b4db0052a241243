//go:build !amd64

package shm

import "unsafe"

// prefetch and prefetchWrite are hints (prefetch_amd64.s): elsewhere they
// do nothing.
func prefetch(unsafe.Pointer)      {}
func prefetchWrite(unsafe.Pointer) {}
