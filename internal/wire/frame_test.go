package wire

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"
)

func TestFrameRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	for _, p := range [][]byte{nil, []byte("a"), bytes.Repeat([]byte("x"), 300)} {
		if err := WriteFrame(&buf, p); err != nil {
			t.Fatal(err)
		}
	}
	r := bufio.NewReader(&buf)
	for _, want := range []int{0, 1, 300} {
		got, err := ReadFrame(r, 1024)
		if err != nil || len(got) != want {
			t.Fatalf("frame: len %d err %v, want len %d", len(got), err, want)
		}
	}
	if _, err := ReadFrame(r, 1024); !errors.Is(err, io.EOF) {
		t.Fatalf("after last frame: %v, want EOF", err)
	}
}

func TestFrameTooLarge(t *testing.T) {
	var buf bytes.Buffer
	_ = WriteFrame(&buf, make([]byte, 100))
	if _, err := ReadFrame(bufio.NewReader(&buf), 99); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("got %v, want ErrTooLarge", err)
	}
}

func TestDecodeJSONStrict(t *testing.T) {
	var v struct{ A int }
	for _, in := range []string{`{"A":1,"B":2}`, `{"A":1} {}`, `nope`} {
		if err := DecodeJSON([]byte(in), &v); err == nil {
			t.Errorf("DecodeJSON(%q) accepted", in)
		}
	}
	if err := DecodeJSON([]byte(`{"A":3}`), &v); err != nil || v.A != 3 {
		t.Fatalf("DecodeJSON valid: %v %v", v, err)
	}
}

func FuzzReadFrame(f *testing.F) {
	f.Add([]byte{3, 'a', 'b', 'c'})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bufio.NewReader(bytes.NewReader(data))
		for {
			b, err := ReadFrame(r, 64)
			if err != nil {
				return
			}
			if len(b) > 64 {
				t.Fatalf("frame of %d bytes passed a 64-byte limit", len(b))
			}
		}
	})
}

// FuzzReadJSON: a frame that decodes re-encodes to a frame that decodes
// to the same value; unknown fields and trailing data never pass.
func FuzzReadJSON(f *testing.F) {
	f.Add([]byte("\x0d{\"A\":1,\"B\":2}"))
	f.Add([]byte("\x0a{\"A\":1} {}"))
	f.Add([]byte("\x07{\"C\":1}"))
	type msg struct {
		A int
		B string
		C []byte `json:",omitempty"`
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v msg
		if err := ReadJSON(bufio.NewReader(bytes.NewReader(data)), 1024, &v); err != nil {
			return
		}
		var b bytes.Buffer
		if err := WriteJSON(&b, v); err != nil {
			t.Fatalf("accepted %+v but cannot write it: %v", v, err)
		}
		var back msg
		if err := ReadJSON(bufio.NewReader(&b), b.Len(), &back); err != nil {
			t.Fatalf("re-read: %v", err)
		}
		if !bytes.Equal(back.C, v.C) || back.A != v.A || back.B != v.B {
			t.Fatalf("round trip: %+v, then %+v", v, back)
		}
	})
}
