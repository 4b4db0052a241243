package proto

import "fmt"

// Checkpoints. A rank's library runs the coordinated checkpoint
// itself, in-band: the decision, the Chandy-Lamport markers and the
// completion round are ordinary messages in a context of their own, so they
// travel in each (source, destination) channel in order with the program's
// messages, which is what the marker algorithm needs. The only frame the
// agent must know is Saved: a rank telling its agent that its part of a
// checkpoint is on disk, so the agent can hash-check, copy and record it.

// CtxCheckpoint is the context of the checkpoint protocol's messages: the
// largest context below the synchronous-send bit (0x80000000, which the
// receiver strips before matching), far from the ones communicators take.
const CtxCheckpoint uint32 = 1<<31 - 1

// TypeSaved is process -> agent: this rank's file of checkpoint Num is
// written (after TypeAgentLost = 20; numbers are append-only).
const TypeSaved byte = 21

// Saved says that a rank wrote its part of checkpoint Num: Size bytes whose
// sha256 is Sum, in the file the agent named (see mpi.EnvCheckpointDir).
// Quiet says the rank's channels were empty at the cut (no message to it
// was in flight): a job may restart from a checkpoint whose every rank was
// quiet at another size. The flags byte that carries it is optional: a
// frame without it is not quiet.
type Saved struct {
	Num   uint64
	Size  uint64
	Sum   [32]byte
	Quiet bool
}

// savedLen is the encoded size of a Saved body without its flags byte.
const savedLen = 8 + 8 + 32

// savedQuiet is the flags bit of Saved.Quiet.
const savedQuiet = 1

// Encode returns the Saved frame.
func (m Saved) Encode() Frame {
	var w writer
	w.u64(m.Num)
	w.u64(m.Size)
	w.b = append(w.b, m.Sum[:]...)
	var flags byte
	if m.Quiet {
		flags |= savedQuiet
	}
	w.b = append(w.b, flags)
	return MakeFrame(TypeSaved, w.b)
}

// DecodeSaved decodes a Saved body.
func DecodeSaved(b []byte) (Saved, error) {
	var flags byte
	if len(b) == savedLen+1 {
		flags, b = b[savedLen], b[:savedLen]
	}
	r := reader{b: b}
	m := Saved{Num: r.u64(), Size: r.u64(), Quiet: flags&savedQuiet != 0}
	copy(m.Sum[:], r.take(32))
	if err := r.done(); err != nil {
		return Saved{}, fmt.Errorf("saved: %w", err)
	}
	if m.Num == 0 {
		return Saved{}, fmt.Errorf("saved: %w: checkpoint number 0", ErrMalformed)
	}
	if flags&^savedQuiet != 0 {
		return Saved{}, fmt.Errorf("saved: %w: unknown flags %#x", ErrMalformed, flags)
	}
	return m, nil
}

// TypeCheckpointNow is agent -> process, with an empty body: the user asked
// for a checkpoint now (`zorilla stop --checkpoint`), so the next
// Checkpoint call takes one whatever --checkpoint-every says. Only rank 0
// decides, so only rank 0's agent sends it. (22 and 23 are taken by the
// shared-memory frames.)
const TypeCheckpointNow byte = 24

// CheckpointNow returns the CHECKPOINTNOW frame.
func CheckpointNow() Frame { return NewFrame(TypeCheckpointNow, 0) }
