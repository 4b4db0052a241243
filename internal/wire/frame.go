// Package wire holds the framing every Zorilla protocol between agents uses:
// a uvarint length followed by that many bytes, read with a hard size limit so
// that a peer can never make an agent allocate more than the protocol allows.
package wire

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// ErrTooLarge is returned when a frame announces more bytes than allowed.
var ErrTooLarge = errors.New("wire: frame too large")

// WriteFrame writes one length-prefixed frame.
func WriteFrame(w io.Writer, payload []byte) error {
	var hdr [binary.MaxVarintLen64]byte
	n := binary.PutUvarint(hdr[:], uint64(len(payload)))
	if _, err := w.Write(append(hdr[:n:n], payload...)); err != nil {
		return fmt.Errorf("wire: write frame: %w", err)
	}
	return nil
}

// ReadFrame reads one frame of at most max bytes. A frame announcing more is
// refused before any of its body is read.
func ReadFrame(r *bufio.Reader, max int) ([]byte, error) {
	size, err := binary.ReadUvarint(r)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		return nil, fmt.Errorf("wire: read frame length: %w", err)
	}
	if size > uint64(max) {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, size, max)
	}
	buf := make([]byte, size)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, fmt.Errorf("wire: read frame body: %w", err)
	}
	return buf, nil
}

// WriteJSON encodes v as JSON and writes it as one frame.
func WriteJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("wire: encode %T: %w", v, err)
	}
	return WriteFrame(w, b)
}

// ReadJSON reads one frame of at most max bytes and decodes it into v.
// Unknown fields are refused so that a malformed message never half-applies.
func ReadJSON(r *bufio.Reader, max int, v any) error {
	b, err := ReadFrame(r, max)
	if err != nil {
		return err
	}
	return DecodeJSON(b, v)
}

// DecodeJSON decodes exactly one JSON value from b into v, refusing unknown
// fields and trailing data.
func DecodeJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("wire: decode %T: %w", v, err)
	}
	if dec.More() {
		return fmt.Errorf("wire: decode %T: trailing data", v)
	}
	return nil
}
