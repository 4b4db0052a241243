package proto

import "fmt"

// TypeSyncAck says that a replicated rank matched a synchronous message:
// process -> agent (Dst, Seq), agent -> agents of the sender's copies and of
// the receiver's backups (Src, Dst, Seq, from the receiver's lead only),
// agent -> each copy of the sender. It is idempotent: a copy completes the
// synchronous send numbered Seq towards Src at the first one and ignores
// repeats.
const TypeSyncAck byte = 26

// SyncAck acknowledges message Seq from rank Dst to rank Src: a receive of
// Src matched it. Src is set by the agent of the receiver.
type SyncAck struct {
	Src, Dst uint32
	Seq      uint64
}

// Encode returns the SyncAck frame.
func (a SyncAck) Encode() Frame {
	var w writer
	w.u32(a.Src)
	w.u32(a.Dst)
	w.u64(a.Seq)
	return MakeFrame(TypeSyncAck, w.b)
}

// DecodeSyncAck decodes a SyncAck body.
func DecodeSyncAck(b []byte) (SyncAck, error) {
	r := reader{b: b}
	a := SyncAck{Src: r.u32(), Dst: r.u32(), Seq: r.u64()}
	if err := r.done(); err != nil {
		return SyncAck{}, fmt.Errorf("sync ack: %w", err)
	}
	return a, nil
}
