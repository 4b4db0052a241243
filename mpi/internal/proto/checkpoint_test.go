package proto

import "testing"

// FuzzDecodeSaved: the Saved decoder never panics and what it decodes
// re-encodes to the same value.
func FuzzDecodeSaved(f *testing.F) {
	f.Add(Saved{Num: 3, Size: 1 << 20, Sum: [32]byte{1, 2}}.Encode().Body())
	f.Add(Saved{Num: 4, Size: 9, Quiet: true}.Encode().Body()[:savedLen])
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeSaved(b)
		if err != nil {
			return
		}
		if g, err := DecodeSaved(m.Encode().Body()); err != nil || g != m {
			t.Fatalf("re-encode: %+v %v", g, err)
		}
	})
}

// TestSavedFlags: the quiet flag travels; a frame without the flags byte
// (an older library's) is not quiet; unknown flags are refused.
func TestSavedFlags(t *testing.T) {
	q := Saved{Num: 2, Size: 10, Sum: [32]byte{9}, Quiet: true}
	body := q.Encode().Body()
	if got, err := DecodeSaved(body); err != nil || got != q {
		t.Fatalf("quiet: %+v %v", got, err)
	}
	if got, err := DecodeSaved(body[:savedLen]); err != nil || got.Quiet || got.Num != 2 {
		t.Fatalf("no flags byte: %+v %v", got, err)
	}
	bad := append([]byte(nil), body...)
	bad[savedLen] = 2
	if _, err := DecodeSaved(bad); err == nil {
		t.Fatal("unknown flag accepted")
	}
}
