// Package proto is the binary wire shared by the mpi library (process side)
// and the agent's router: the process<->agent protocol over the unix socket
// and the agent<->agent link protocol over libp2p streams. Both use the same
// frame: a little-endian uint32 length L, then L bytes made of one type byte
// and the body. mpi/PROTOCOL.md is the normative description.
package proto

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Version is the protocol version carried by Hello and Welcome.
const Version = 2

// HeaderLen is the size of a frame's fixed prefix: length (4) and type (1).
const HeaderLen = 5

// Frame types. Numbers are append-only: a number is never reused with
// another meaning. Types shared by both protocols have the same number so a
// MSG frame is forwarded between them byte for byte.
const (
	TypeHello    byte = 1  // process -> agent: job, key, rank, size, replica
	TypeWelcome  byte = 2  // agent -> process: hello accepted, limits, host layout
	TypeStart    byte = 3  // agent -> process: every rank is in Init, go
	TypeMsg      byte = 4  // both protocols: one fragment of a message
	TypeFinalize byte = 5  // process -> agent: rank is done
	TypeBye      byte = 6  // agent -> process: finalize done; link: job ended cleanly here
	TypeAbort    byte = 7  // process -> agent: abort the job with a code
	TypeFail     byte = 8  // agent -> process, and link: the job failed
	TypeRefused  byte = 9  // agent -> process, and link: hello/open refused
	TypeCredit   byte = 10 // link, acceptor -> opener: bytes of window given back
	TypePing     byte = 11 // link, opener -> acceptor: heartbeat
	TypePong     byte = 12 // link, acceptor -> opener: heartbeat answer
	TypeOpen     byte = 13 // link, opener -> acceptor: job and key
	TypeAccept   byte = 14 // link, acceptor -> opener: open accepted, initial window
)

// Errors of the frame layer.
var (
	ErrTooLarge  = errors.New("proto: frame too large")
	ErrMalformed = errors.New("proto: malformed frame")
)

// Frame is one whole frame, header included: Frame[0:4] is the length,
// Frame[4] the type, Frame[5:] the body. Keeping the header lets a router
// forward a frame without copying it.
type Frame []byte

// Type is the frame's type byte.
func (f Frame) Type() byte { return f[4] }

// Body is the frame's body, after the type byte.
func (f Frame) Body() []byte { return f[HeaderLen:] }

// NewFrame allocates a frame of the given type with a body of n bytes,
// the header already filled in.
func NewFrame(typ byte, n int) Frame {
	f := make(Frame, HeaderLen+n)
	binary.LittleEndian.PutUint32(f, uint32(1+n))
	f[4] = typ
	return f
}

// MakeFrame returns a frame of the given type holding a copy of body.
func MakeFrame(typ byte, body []byte) Frame {
	f := NewFrame(typ, len(body))
	copy(f[HeaderLen:], body)
	return f
}

// ReadHeader reads a frame's 5-byte prefix and returns its type and body
// length. A length of 0 or a body above max is refused before any body byte
// is read, so a peer cannot make the reader allocate more than max.
func ReadHeader(r io.Reader, hdr *[HeaderLen]byte, max int) (typ byte, n int, err error) {
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		if errors.Is(err, io.EOF) {
			return 0, 0, io.EOF
		}
		return 0, 0, fmt.Errorf("proto: read frame header: %w", err)
	}
	return ParseHeader(hdr[:], max)
}

// ParseHeader decodes a 5-byte frame prefix.
func ParseHeader(hdr []byte, max int) (typ byte, n int, err error) {
	l := binary.LittleEndian.Uint32(hdr)
	if l == 0 {
		return 0, 0, fmt.Errorf("%w: zero length", ErrMalformed)
	}
	if uint64(l-1) > uint64(max) {
		return 0, 0, fmt.Errorf("%w: body of %d bytes, limit %d", ErrTooLarge, l-1, max)
	}
	return hdr[4], int(l - 1), nil
}

// ReadFrame reads one whole frame whose body is at most max bytes.
func ReadFrame(r io.Reader, max int) (Frame, error) {
	var hdr [HeaderLen]byte
	typ, n, err := ReadHeader(r, &hdr, max)
	if err != nil {
		return nil, err
	}
	f := NewFrame(typ, n)
	if _, err := io.ReadFull(r, f[HeaderLen:]); err != nil {
		return nil, fmt.Errorf("proto: read frame body: %w", unexpected(err))
	}
	return f, nil
}

// unexpected turns a clean EOF inside a frame into io.ErrUnexpectedEOF.
func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// reader decodes a body field by field, remembering the first error.
type reader struct {
	b   []byte
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if len(r.b) < n {
		r.err = fmt.Errorf("%w: body too short", ErrMalformed)
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) u16() uint16 {
	if b := r.take(2); b != nil {
		return binary.LittleEndian.Uint16(b)
	}
	return 0
}

func (r *reader) u32() uint32 {
	if b := r.take(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (r *reader) str(max int) string {
	n := int(r.u16())
	if r.err == nil && n > max {
		r.err = fmt.Errorf("%w: string of %d bytes, limit %d", ErrMalformed, n, max)
		return ""
	}
	return string(r.take(n))
}

// done reports the first error, or trailing bytes after the last field.
func (r *reader) done() error {
	if r.err == nil && len(r.b) != 0 {
		return fmt.Errorf("%w: %d trailing bytes", ErrMalformed, len(r.b))
	}
	return r.err
}

// writer appends fields to a body.
type writer struct{ b []byte }

func (w *writer) u16(v uint16) { w.b = binary.LittleEndian.AppendUint16(w.b, v) }
func (w *writer) u32(v uint32) { w.b = binary.LittleEndian.AppendUint32(w.b, v) }
func (w *writer) str(s string) {
	w.u16(uint16(len(s)))
	w.b = append(w.b, s...)
}
