package proto

import "testing"

// FuzzDecodeSaved: the Saved decoder never panics and what it decodes
// re-encodes to the same value.
func FuzzDecodeSaved(f *testing.F) {
	f.Add(Saved{Num: 3, Size: 1 << 20, Sum: [32]byte{1, 2}}.Encode().Body())
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
