package blob

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// The sha256 of "abc" (FIPS 180-2, appendix B.1).
const abcHex = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"

func TestSumAndString(t *testing.T) {
	if got := Sum([]byte("abc")).String(); got != abcHex {
		t.Fatalf("Sum(abc) = %s, want %s", got, abcHex)
	}
	if !(Hash{}).IsZero() || Sum(nil).IsZero() {
		t.Fatal("IsZero wrong")
	}
}

func TestParseHash(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{abcHex, true},
		{strings.Repeat("0", 64), true},
		{"", false},
		{abcHex[:63], false},
		{abcHex + "0", false},
		{strings.ToUpper(abcHex), false},
		{"sha256:" + abcHex[7:], false},
		{strings.Repeat("g", 64), false},
		{" " + abcHex[1:], false},
	} {
		h, err := ParseHash(tc.in)
		if tc.ok != (err == nil) {
			t.Errorf("ParseHash(%q) err = %v, want ok=%v", tc.in, err, tc.ok)
			continue
		}
		if err != nil && !errors.Is(err, ErrBadHash) {
			t.Errorf("ParseHash(%q) err = %v, want ErrBadHash", tc.in, err)
		}
		if tc.ok && h.String() != tc.in {
			t.Errorf("ParseHash(%q).String() = %s", tc.in, h)
		}
	}
}

func TestHashJSON(t *testing.T) {
	type doc struct{ Program Hash }
	b, err := json.Marshal(doc{Sum([]byte("abc"))})
	if err != nil || string(b) != `{"Program":"`+abcHex+`"}` {
		t.Fatalf("marshal: %s %v", b, err)
	}
	var d doc
	if err := json.Unmarshal(b, &d); err != nil || d.Program != Sum([]byte("abc")) {
		t.Fatalf("unmarshal: %v %v", d, err)
	}
	if err := json.Unmarshal([]byte(`{"Program":"xyz"}`), &d); !errors.Is(err, ErrBadHash) {
		t.Fatalf("unmarshal bad hash: %v", err)
	}
}

func FuzzParseHash(f *testing.F) {
	for _, s := range []string{abcHex, "", "00", strings.ToUpper(abcHex), abcHex + "ff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := ParseHash(s)
		if err != nil {
			if !h.IsZero() {
				t.Fatalf("ParseHash(%q) failed but returned %s", s, h)
			}
			return
		}
		if h.String() != s {
			t.Fatalf("ParseHash(%q) round trip gives %s", s, h)
		}
	})
}
