package proto

import (
	"encoding/binary"
	"fmt"
)

// TypeCma is a frame of a shared-memory ring only (never on a socket): a
// message the reader copies straight out of the writer's memory (see
// "Single-copy messages" in PROTOCOL.md).
const TypeCma byte = 25

// CmaLen is the length of a CMA body.
const CmaLen = MsgHeaderLen + 4 + 8 + 8 + 8

// Bounds a CMA frame must respect: Linux's PID_MAX_LIMIT, and the top of a
// user address space (57 bits with 5-level page tables).
const (
	maxPid  = 1 << 22
	maxAddr = 1 << 57
)

// Cma is a rendezvous: the whole message of Msg.Total bytes (Msg.Offset is
// 0) lies at Addr in process Pid, which waits for the reader's completion
// of Token before it touches it again. Ident is the address, in that
// process, of the ring's identity word, by which the reader checks that
// Pid is the ring's writer.
type Cma struct {
	Msg   MsgHeader
	Pid   uint32
	Addr  uint64
	Ident uint64
	Token uint64
}

// Put writes the whole frame, header included, into b, which must hold
// HeaderLen+CmaLen bytes.
func (c *Cma) Put(b []byte) {
	_ = b[HeaderLen+CmaLen-1]
	binary.LittleEndian.PutUint32(b, 1+CmaLen)
	b[4] = TypeCma
	body := b[HeaderLen:]
	c.Msg.Put(body)
	binary.LittleEndian.PutUint32(body[MsgHeaderLen:], c.Pid)
	binary.LittleEndian.PutUint64(body[MsgHeaderLen+4:], c.Addr)
	binary.LittleEndian.PutUint64(body[MsgHeaderLen+12:], c.Ident)
	binary.LittleEndian.PutUint64(body[MsgHeaderLen+20:], c.Token)
}

// DecodeCma decodes and checks a CMA body: a whole, non-empty message whose
// bytes and identity word lie in a user address space, a plausible pid and
// a token.
func DecodeCma(b []byte) (Cma, error) {
	if len(b) != CmaLen {
		return Cma{}, fmt.Errorf("cma: %w: body of %d bytes, want %d", ErrMalformed, len(b), CmaLen)
	}
	c := Cma{
		Pid:   binary.LittleEndian.Uint32(b[MsgHeaderLen:]),
		Addr:  binary.LittleEndian.Uint64(b[MsgHeaderLen+4:]),
		Ident: binary.LittleEndian.Uint64(b[MsgHeaderLen+12:]),
		Token: binary.LittleEndian.Uint64(b[MsgHeaderLen+20:]),
	}
	total := binary.LittleEndian.Uint64(b[24:])
	switch {
	case total == 0 || total >= maxAddr:
		return Cma{}, fmt.Errorf("cma: %w: message of %d bytes", ErrMalformed, total)
	case c.Pid == 0 || c.Pid > maxPid:
		return Cma{}, fmt.Errorf("cma: %w: pid %d", ErrMalformed, c.Pid)
	case c.Addr == 0 || c.Addr >= maxAddr || total > maxAddr-c.Addr:
		return Cma{}, fmt.Errorf("cma: %w: %d bytes at %#x", ErrMalformed, total, c.Addr)
	case c.Ident == 0 || c.Ident%8 != 0 || c.Ident >= maxAddr:
		return Cma{}, fmt.Errorf("cma: %w: identity word at %#x", ErrMalformed, c.Ident)
	case c.Token == 0:
		return Cma{}, fmt.Errorf("cma: %w: token 0", ErrMalformed)
	}
	h, err := DecodeMsgHeader(b[:MsgHeaderLen], int(total))
	if err == nil && h.Offset != 0 {
		err = fmt.Errorf("%w: rendezvous at offset %d", ErrMalformed, h.Offset)
	}
	if err != nil {
		return Cma{}, fmt.Errorf("cma: %w", err)
	}
	c.Msg = h
	return c, nil
}
