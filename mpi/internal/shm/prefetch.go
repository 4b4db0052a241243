package shm

import "unsafe"

// Prefetching. A cache line the other process wrote last costs a read of
// it a transfer between cores (some 50 ns on the VMs measured), and a
// locked store to one it holds as well. Where a reader knows which such
// lines it will touch after the message it is reading, it asks for them
// at once, so the transfers overlap the work on the message instead of
// following it: the next record's control word, which a receive that ends
// its poll looks at (Unwatch), and the read side's flag it then stores.

// prefetchNext starts loading the control word of the record after the
// one begun.
func (r *Ring) prefetchNext() { prefetch(unsafe.Pointer(r.ctrl(r.next))) }

// PrepareUnwatch starts taking the line of the read side's flag, which the
// Unwatch that follows stores: call it when a poll found its message.
func (r *Ring) PrepareUnwatch() { prefetchWrite(unsafe.Pointer(r.u32(offRSleep))) }
