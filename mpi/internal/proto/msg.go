package proto

import (
	"encoding/binary"
	"fmt"
)

// MsgHeaderLen is the size of the header at the start of every MSG body.
const MsgHeaderLen = 40

// Reserved communicator contexts. A context separates traffic so that a
// receive in one never matches a message of another.
const (
	CtxWorld     uint32 = 0 // point-to-point on the world communicator
	CtxWorldColl uint32 = 1 // collectives on the world communicator
	MaxTag              = 1<<31 - 1
	MaxRanks            = 1 << 16 // ranks per job the protocol accepts
)

// MsgHeader describes one fragment of a message. Every fragment of a message
// carries the same Dst, Src, Ctx, Tag, Seq and Total; Offset is where its data
// goes. Fragments of one message are sent in order, back to back.
type MsgHeader struct {
	Dst    uint32 // destination rank
	Src    uint32 // source rank, stamped by the agent
	Ctx    uint32 // communicator context
	Tag    int32  // user tag, >= 0
	Seq    uint64 // per (Src, Dst) message number, from 0
	Total  uint64 // message length in bytes
	Offset uint64 // offset of this fragment's data in the message
}

// Put writes h into b[0:MsgHeaderLen].
func (h *MsgHeader) Put(b []byte) {
	_ = b[MsgHeaderLen-1]
	binary.LittleEndian.PutUint32(b[0:], h.Dst)
	binary.LittleEndian.PutUint32(b[4:], h.Src)
	binary.LittleEndian.PutUint32(b[8:], h.Ctx)
	binary.LittleEndian.PutUint32(b[12:], uint32(h.Tag))
	binary.LittleEndian.PutUint64(b[16:], h.Seq)
	binary.LittleEndian.PutUint64(b[24:], h.Total)
	binary.LittleEndian.PutUint64(b[32:], h.Offset)
}

// PutSrc overwrites the source rank of a MSG body in place.
func PutSrc(body []byte, src uint32) { binary.LittleEndian.PutUint32(body[4:], src) }

// DecodeMsgHeader decodes and checks the header of a MSG body whose data part
// is dataLen bytes: the fragment must lie inside the message, carry data
// unless the message is empty, and the tag must not be negative.
func DecodeMsgHeader(b []byte, dataLen int) (MsgHeader, error) {
	if len(b) < MsgHeaderLen {
		return MsgHeader{}, fmt.Errorf("%w: msg header of %d bytes", ErrMalformed, len(b))
	}
	h := MsgHeader{
		Dst:    binary.LittleEndian.Uint32(b[0:]),
		Src:    binary.LittleEndian.Uint32(b[4:]),
		Ctx:    binary.LittleEndian.Uint32(b[8:]),
		Tag:    int32(binary.LittleEndian.Uint32(b[12:])),
		Seq:    binary.LittleEndian.Uint64(b[16:]),
		Total:  binary.LittleEndian.Uint64(b[24:]),
		Offset: binary.LittleEndian.Uint64(b[32:]),
	}
	return h, h.check(dataLen)
}

func (h *MsgHeader) check(dataLen int) error {
	switch {
	case h.Tag < 0:
		return fmt.Errorf("%w: negative tag %d", ErrMalformed, h.Tag)
	case dataLen == 0 && h.Total != 0:
		return fmt.Errorf("%w: empty fragment of a %d-byte message", ErrMalformed, h.Total)
	case h.Offset > h.Total || uint64(dataLen) > h.Total-h.Offset:
		return fmt.Errorf("%w: fragment [%d,+%d) outside a %d-byte message", ErrMalformed, h.Offset, dataLen, h.Total)
	}
	return nil
}

// Last reports whether a fragment of dataLen bytes ends its message.
func (h *MsgHeader) Last(dataLen int) bool { return h.Offset+uint64(dataLen) == h.Total }

// MsgFrame returns the frame header and MSG header for one fragment of
// dataLen bytes, ready to be written before the data (e.g. with writev).
func MsgFrame(h *MsgHeader, dataLen int) []byte {
	b := make([]byte, HeaderLen+MsgHeaderLen)
	PutMsgFrame(b, h, dataLen)
	return b
}

// PutMsgFrame writes the frame header and MSG header into b, which must hold
// HeaderLen+MsgHeaderLen bytes.
func PutMsgFrame(b []byte, h *MsgHeader, dataLen int) {
	binary.LittleEndian.PutUint32(b, uint32(1+MsgHeaderLen+dataLen))
	b[4] = TypeMsg
	h.Put(b[HeaderLen:])
}
