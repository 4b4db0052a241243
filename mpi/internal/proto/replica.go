package proto

import (
	"encoding/binary"
	"fmt"
)

// Frames of replicated jobs on the link protocol. Only the lead copy of a
// rank transmits; every copy keeps what it sent in a log until each live
// copy of the destination acknowledges it (Ack), and a copy that ends
// without Finalize is announced to the job's other agents (CopyLost) so the
// next copy takes over as lead.
const (
	TypeAck      byte = 15 // link, opener -> acceptor: delivery positions of messages from the acceptor's ranks
	TypeCopyLost byte = 16 // link, opener -> acceptor: a copy of a rank ended without Finalize
)

// AckEntry says that copy Replica of rank Dst has received every message
// from rank Src numbered below Seq, and the first Off bytes of message Seq.
type AckEntry struct {
	Src, Dst, Replica uint32
	Seq, Off          uint64
}

// ackEntryLen is the encoded size of one AckEntry.
const ackEntryLen = 4 + 4 + 4 + 8 + 8

// MaxAckEntries is the most entries one Ack frame carries, so that it fits
// MaxControl.
const MaxAckEntries = (MaxControl - 4) / ackEntryLen

// EncodeAcks returns Ack frames carrying the entries, as many frames as
// MaxAckEntries requires.
func EncodeAcks(entries []AckEntry) []Frame {
	var out []Frame
	for len(entries) > 0 {
		n := min(len(entries), MaxAckEntries)
		var w writer
		w.u32(uint32(n))
		for _, e := range entries[:n] {
			w.u32(e.Src)
			w.u32(e.Dst)
			w.u32(e.Replica)
			w.u64(e.Seq)
			w.u64(e.Off)
		}
		out = append(out, MakeFrame(TypeAck, w.b))
		entries = entries[n:]
	}
	return out
}

// DecodeAck decodes an Ack body.
func DecodeAck(b []byte) ([]AckEntry, error) {
	r := reader{b: b}
	n := r.u32()
	if r.err == nil && (n > MaxAckEntries || int(n)*ackEntryLen != len(r.b)) {
		return nil, fmt.Errorf("ack: %w: %d entries in %d bytes", ErrMalformed, n, len(r.b))
	}
	out := make([]AckEntry, n)
	for i := range out {
		out[i] = AckEntry{Src: r.u32(), Dst: r.u32(), Replica: r.u32(), Seq: r.u64(), Off: r.u64()}
	}
	if err := r.done(); err != nil {
		return nil, fmt.Errorf("ack: %w", err)
	}
	return out, nil
}

// CopyLost announces that copy Replica of rank Rank is gone.
type CopyLost struct {
	Rank, Replica uint32
}

// Encode returns the CopyLost frame.
func (c CopyLost) Encode() Frame {
	var w writer
	w.u32(c.Rank)
	w.u32(c.Replica)
	return MakeFrame(TypeCopyLost, w.b)
}

// DecodeCopyLost decodes a CopyLost body.
func DecodeCopyLost(b []byte) (CopyLost, error) {
	r := reader{b: b}
	c := CopyLost{Rank: r.u32(), Replica: r.u32()}
	if err := r.done(); err != nil {
		return CopyLost{}, fmt.Errorf("copy lost: %w", err)
	}
	return c, nil
}

func (r *reader) u64() uint64 {
	if b := r.take(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

func (w *writer) u64(v uint64) { w.b = binary.LittleEndian.AppendUint64(w.b, v) }

// Frames that keep the copies of a rank identical where MPI lets the
// library choose (which message a wildcard receive takes, what a probe or a
// test finds): the lead copy's library tells its agent each choice, and the
// backups' libraries take the lead's.
const (
	TypeRole      byte = 17 // agent -> process: the job's replica count, and whether this copy leads its rank
	TypeDecide    byte = 18 // process -> agent -> agents of the other copies -> their processes: a lead's choice
	TypeDecideAck byte = 19 // link, opener -> acceptor: a backup's agent holds one of the lead's choices
)

// Role tells a copy of a replicated rank how many copies its rank has and
// whether it leads (it is sent before Start, and again when a backup takes
// over).
type Role struct {
	Replicas uint32
	Lead     bool
}

// Encode returns the Role frame.
func (m Role) Encode() Frame {
	var w writer
	w.u32(m.Replicas)
	w.b = append(w.b, boolByte(m.Lead))
	return MakeFrame(TypeRole, w.b)
}

// DecodeRole decodes a Role body.
func DecodeRole(b []byte) (Role, error) {
	r := reader{b: b}
	m := Role{Replicas: r.u32()}
	lead := r.take(1)
	if err := r.done(); err != nil {
		return Role{}, fmt.Errorf("role: %w", err)
	}
	if lead[0] > 1 {
		return Role{}, fmt.Errorf("role: %w: lead flag %d", ErrMalformed, lead[0])
	}
	m.Lead = lead[0] == 1
	return m, nil
}

// Kinds of choices a Decide carries.
const (
	DecideRecv   uint8 = 1 // a receive from any source took a message from Src
	DecideProbe  uint8 = 2 // a probe found (Found) a message from Src with Tag
	DecideTest   uint8 = 3 // a test found its request complete (Found) or not
	maxDecideKnd       = DecideTest
)

// Decide is one choice of a lead copy, numbered in its program order. Rank
// is set by the agent that forwards it.
type Decide struct {
	Rank  uint32
	Num   uint64
	Kind  uint8
	Found bool
	Src   int32
	Tag   int32
}

// Encode returns the Decide frame.
func (d Decide) Encode() Frame {
	var w writer
	w.u32(d.Rank)
	w.u64(d.Num)
	w.b = append(w.b, d.Kind, boolByte(d.Found))
	w.u32(uint32(d.Src))
	w.u32(uint32(d.Tag))
	return MakeFrame(TypeDecide, w.b)
}

// DecodeDecide decodes a Decide body.
func DecodeDecide(b []byte) (Decide, error) {
	r := reader{b: b}
	d := Decide{Rank: r.u32(), Num: r.u64()}
	kf := r.take(2)
	d.Src, d.Tag = int32(r.u32()), int32(r.u32())
	if err := r.done(); err != nil {
		return Decide{}, fmt.Errorf("decide: %w", err)
	}
	if kf[0] < 1 || kf[0] > maxDecideKnd || kf[1] > 1 {
		return Decide{}, fmt.Errorf("decide: %w: kind %d, flag %d", ErrMalformed, kf[0], kf[1])
	}
	d.Kind, d.Found = kf[0], kf[1] == 1
	return d, nil
}

// DecideAck says that the agent of copy Replica of rank Rank holds the
// choice of the rank's lead numbered Num.
type DecideAck struct {
	Rank, Replica uint32
	Num           uint64
}

// Encode returns the DecideAck frame.
func (a DecideAck) Encode() Frame {
	var w writer
	w.u32(a.Rank)
	w.u32(a.Replica)
	w.u64(a.Num)
	return MakeFrame(TypeDecideAck, w.b)
}

// DecodeDecideAck decodes a DecideAck body.
func DecodeDecideAck(b []byte) (DecideAck, error) {
	r := reader{b: b}
	a := DecideAck{Rank: r.u32(), Replica: r.u32(), Num: r.u64()}
	if err := r.done(); err != nil {
		return DecideAck{}, fmt.Errorf("decide ack: %w", err)
	}
	return a, nil
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

// TypeAgentLost (link, opener -> acceptor) says the sending agent counted
// another agent of the job lost; every agent then counts it lost, so all
// agree on who left even when only some of them lost sight of it.
const TypeAgentLost byte = 20

// maxPeerLen bounds the bytes of a peer ID in AgentLost.
const maxPeerLen = 128

// EncodeAgentLost returns the AgentLost frame naming peer (its ID's bytes).
func EncodeAgentLost(peer string) Frame {
	var w writer
	w.str(peer[:min(len(peer), maxPeerLen)])
	return MakeFrame(TypeAgentLost, w.b)
}

// DecodeAgentLost decodes an AgentLost body.
func DecodeAgentLost(b []byte) (string, error) {
	r := reader{b: b}
	p := r.str(maxPeerLen)
	if err := r.done(); err != nil {
		return "", fmt.Errorf("agent lost: %w", err)
	}
	return p, nil
}
