package job

import (
	"fmt"
	"strings"
	"testing"
)

func TestNewIDParses(t *testing.T) {
	seen := map[ID]bool{}
	for i := 0; i < 100; i++ {
		id := NewID()
		if len(id) != 26 {
			t.Fatalf("NewID %q has %d characters, want 26", id, len(id))
		}
		if _, err := ParseID(string(id)); err != nil {
			t.Fatalf("ParseID(NewID()): %v", err)
		}
		if seen[id] {
			t.Fatalf("NewID repeated %q", id)
		}
		seen[id] = true
	}
}

func TestParseID(t *testing.T) {
	good := []string{"a", "job-1", "J_2.x", strings.Repeat("z", MaxIDLen)}
	bad := []string{"", ".", "..", "../etc", "a/b", "-n", ".hidden", "a b", "é", "a\x00", strings.Repeat("z", MaxIDLen+1)}
	for _, s := range good {
		if _, err := ParseID(s); err != nil {
			t.Errorf("ParseID(%q): %v", s, err)
		}
	}
	for _, s := range bad {
		if _, err := ParseID(s); err == nil {
			t.Errorf("ParseID(%q) accepted", s)
		}
	}
}

func TestKey(t *testing.T) {
	k := NewKey()
	if _, err := ParseKey(string(k)); err != nil {
		t.Fatalf("ParseKey(NewKey()): %v", err)
	}
	if k == NewKey() {
		t.Fatal("two keys equal")
	}
	if !k.Equal(k) || k.Equal(NewKey()) || Key("").Equal("") {
		t.Fatal("Equal is wrong")
	}
	for _, f := range []string{"%s", "%v", "%+v", "%#v"} {
		if s := fmt.Sprintf(f, k); strings.Contains(s, string(k)) {
			t.Errorf("%s prints the secret: %s", f, s)
		}
	}
	for _, s := range []string{"", "short", string(k) + "A", strings.Repeat("!", 43)} {
		if _, err := ParseKey(s); err == nil {
			t.Errorf("ParseKey(%q) accepted", s)
		}
	}
}
