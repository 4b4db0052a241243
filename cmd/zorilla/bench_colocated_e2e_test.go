package main

import (
	"regexp"
	"testing"
)

// TestBenchColocatedEndToEnd runs `zorilla bench pingpong --colocated` as a
// user does: two agent processes, the ping-pong once on a rank on each and
// once on two ranks of one agent (through shared memory, sandboxed like any
// job), and the NetPIPE rows where installed.
func TestBenchColocatedEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts agent processes")
	}
	bin := zorillaBinary(t)
	num := `\d+\.\d\d`
	r, dir := demoBinary(t, bin, nil, "bench", "pingpong", "--colocated", "--no-raw", "--no-relay",
		"--rounds", "1", "--sizes", "8,65536")
	if r.code != 0 {
		t.Fatalf("bench: %v", r)
	}
	for _, want := range []string{
		`(?m)^\s+8 B  zorilla\s+` + num + `\s+` + num + `\s+-\s+-$`,
		`(?m)^\s+8 B  zorilla colocated\s+` + num + `\s+` + num + `\s+-\s+-$`,
		`(?m)^\s+64 KiB  zorilla colocated\s+` + num + `\s+` + num + `\s+-\s+-$`,
		// NetPIPE: figures with ratios, or why there are none
		`(?m)^\s+8 B  NetPIPE vader\s+(` + num + `\s+` + num + `\s+` + num + `x\s+` + num + `x|not installed .*|failed .*)$`,
		`(?m)^\s+8 B  NetPIPE MPICH\s+(` + num + `\s+` + num + `\s+` + num + `x\s+` + num + `x|not installed .*|failed .*)$`,
	} {
		if !regexp.MustCompile(want).MatchString(r.stdout) {
			t.Errorf("the table has no line matching %s:\n%v", want, r)
		}
	}
	assertGone(t, dir)
}
