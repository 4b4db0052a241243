package shm

import "unsafe"

// prefetch starts loading the cache line at addr, to be read soon.
//
//go:noescape
func prefetch(addr unsafe.Pointer)

// prefetchWrite starts taking the cache line at addr for writing.
//
//go:noescape
func prefetchWrite(addr unsafe.Pointer)
