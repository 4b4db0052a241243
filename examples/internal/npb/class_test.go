package npb

import (
	"errors"
	"strings"
	"testing"
)

func TestParseClass(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Class
		err  bool
	}{
		{"S", 'S', false},
		{"a", 'A', false},
		{" B ", 'B', false},
		{"C", 0, true}, // not in the known list below
		{"", 0, true},
		{"AB", 0, true},
		{"é", 0, true},
	} {
		got, err := ParseClass(c.in, "SWAB")
		if c.err != (err != nil) || got != c.want {
			t.Errorf("ParseClass(%q) = %v, %v", c.in, got, err)
		}
		if err != nil && !errors.Is(err, ErrClass) {
			t.Errorf("ParseClass(%q) error %v is not ErrClass", c.in, err)
		}
	}
	if s := Class('W').String(); s != "W" {
		t.Errorf("String = %q", s)
	}
}

// FuzzParseClass: any input either fails with ErrClass or gives one of the
// known letters.
func FuzzParseClass(f *testing.F) {
	for _, s := range []string{"S", "a", " B ", "", "AB", "é", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseClass(s, "SWAB")
		if err != nil {
			if !errors.Is(err, ErrClass) {
				t.Fatalf("ParseClass(%q): %v", s, err)
			}
			return
		}
		if !strings.Contains("SWAB", c.String()) {
			t.Fatalf("ParseClass(%q) = %v", s, c)
		}
	})
}
