package proc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

func lines(t *testing.T, in string, max int) []string {
	t.Helper()
	var got []string
	if err := readLines(strings.NewReader(in), max, func(b []byte) { got = append(got, string(b)) }); err != nil {
		t.Fatal(err)
	}
	return got
}

func TestReadLines(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"a\n", []string{"a"}},
		{"a\nb", []string{"a", "b"}},
		{"\n\n", []string{"", ""}},
		{"a\r\n", []string{"a\r"}},
		{strings.Repeat("x", 16) + "\n", []string{strings.Repeat("x", 16)}},      // exactly the limit
		{strings.Repeat("x", 17) + "\n", []string{strings.Repeat("x", 16), "x"}}, // one over
		{strings.Repeat("x", 40), []string{strings.Repeat("x", 16), strings.Repeat("x", 16), strings.Repeat("x", 8)}},
		{strings.Repeat("x", 16) + "\n\n", []string{strings.Repeat("x", 16), ""}}, // a real empty line after
	} {
		if got := lines(t, tc.in, 16); !slices.Equal(got, tc.want) {
			t.Errorf("readLines(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestReadLinesError(t *testing.T) {
	boom := errors.New("boom")
	var got []string
	err := readLines(io.MultiReader(strings.NewReader("a\nb"), iotest.ErrReader(boom)), 16,
		func(b []byte) { got = append(got, string(b)) })
	if !errors.Is(err, boom) || !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("readLines = %q, %v", got, err)
	}
}

// FuzzReadLines: whatever a process writes, pieces are bounded, hold no
// newline, and together with the newlines they make up all the input.
func FuzzReadLines(f *testing.F) {
	f.Add([]byte("a\nbb\n"), 16)
	f.Add(bytes.Repeat([]byte("x"), 100), 16)
	f.Add([]byte("\n\n\n"), 20)
	f.Fuzz(func(t *testing.T, in []byte, max int) {
		max = 16 + abs(max)%64
		var total int
		err := readLines(bytes.NewReader(in), max, func(b []byte) {
			if len(b) > max || bytes.IndexByte(b, '\n') >= 0 {
				t.Fatalf("piece %q breaks the bound %d or holds a newline", b, max)
			}
			total += len(b)
		})
		if err != nil || total != len(in)-bytes.Count(in, []byte("\n")) {
			t.Fatalf("pieces hold %d bytes of %d (err %v)", total, len(in), err)
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

func TestTailBounds(t *testing.T) {
	tl := tail{maxLines: 3, maxBytes: 10}
	for i := range 5 {
		tl.add(Line{Stream: Stdout, Text: fmt.Sprint(i)})
	}
	if got := tl.slice(); len(got) != 3 || got[0].Text != "2" || got[2].Text != "4" {
		t.Fatalf("by count: %v", got)
	}
	tl.add(Line{Stream: Stderr, Text: "abcdefghi"}) // 9 bytes: only "4" (1 byte) may stay
	if got := tl.slice(); len(got) != 2 || got[0].Text != "4" || got[1].Text != "abcdefghi" {
		t.Fatalf("by bytes: %v", got)
	}
	tl.add(Line{Stream: Stderr, Text: "0123456789ABC"}) // longer than the bound: its end is kept
	if got := tl.slice(); len(got) != 1 || got[0].Text != "3456789ABC" || tl.bytes != 10 {
		t.Fatalf("oversized line: %v (%d bytes)", got, tl.bytes)
	}
}

func TestSinkSerializesAndCopies(t *testing.T) {
	var got [][]byte
	s := newSink(func(_ string, b []byte) { got = append(got, b) }, 10, 100)
	buf := []byte("first")
	s.emitter(Stdout)(buf)
	copy(buf, "XXXXX") // the caller's buffer is reused, as the reader's is
	if string(got[0]) != "first" || s.lines()[0].Text != "first" {
		t.Fatalf("line not copied: %q %v", got[0], s.lines())
	}
}
