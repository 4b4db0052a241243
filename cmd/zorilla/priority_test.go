package main

import (
	"strings"
	"testing"
)

// Bad --priority, --mem-per-proc, --max-priority, --priority-cap and
// --swap-policy are usage errors (exit 2, one line) before anything
// starts.
func TestPriorityFlagsRefuseBadValues(t *testing.T) {
	dd := t.TempDir()
	prog := script(t, "true")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"submit", "--data-dir", dd, "--priority", "101", prog}, "priority: must be -100..100, got 101"},
		{[]string{"submit", "--data-dir", dd, "--priority", "-101", prog}, "priority: must be -100..100"},
		{[]string{"submit", "--data-dir", dd, "--priority", "high", prog}, "invalid value"},
		{[]string{"submit", "--data-dir", dd, "--mem-per-proc", "lots", prog}, "--mem-per-proc"},
		{[]string{"submit", "--data-dir", dd, "--mem-per-proc", "-1G", prog}, "--mem-per-proc"},
	} {
		r := zorilla(c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%q: want exit 2 mentioning %q, got %v", c.args, c.want, r)
		}
	}
	dir := shortDataDir(t)
	const somePeer = "12D3KooWDpJ7As7BWAwRMfu1VU2WCqNjvq387JEYKDBj4kx6nXTN"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--max-priority", "101"}, "--max-priority: must be -100..100, got 101"},
		{[]string{"--priority-cap", "nopeer=5"}, `--priority-cap "nopeer=5": peer:`},
		{[]string{"--priority-cap", somePeer}, "want PEER=N"},
		{[]string{"--priority-cap", somePeer + "=x"}, "is not a whole number"},
		{[]string{"--priority-cap", somePeer + "=500"}, "priority: must be -100..100, got 500"},
		{[]string{"--swap-policy", "eager"}, `--swap-policy: "eager": want sequential or overlapped`},
	} {
		args := append([]string{"agent", "--data-dir", dir, "--listen", "/ip4/127.0.0.1/tcp/0", "--mdns=false"}, c.args...)
		r := zorilla(args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%v: want exit 2 and one line with %q, got %v", c.args, c.want, r)
		}
	}
}

func TestParsePriorityCap(t *testing.T) {
	const somePeer = "12D3KooWDpJ7As7BWAwRMfu1VU2WCqNjvq387JEYKDBj4kx6nXTN"
	id, n, err := parsePriorityCap(somePeer + " = 40")
	if err != nil || id.String() != somePeer || n != 40 {
		t.Fatalf("got %v %d %v", id, n, err)
	}
}
