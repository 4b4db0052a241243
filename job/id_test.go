package job

import (
	"fmt"
	"strings"
	"testing"
)

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
