package main

import (
	"bytes"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/zorilla-p2p/zorilla/testnet/sim"
)

func runCmd(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out, errs bytes.Buffer
	code := run(args, &out, &errs)
	return code, out.String() + errs.String()
}

// TestRunEndsWithItsDigest: a run prints its table and, last, the digest
// of its trace, the same for the same seed.
func TestRunEndsWithItsDigest(t *testing.T) {
	args := []string{"--agents", "60", "--jobs", "4", "--seed", "3", "--faults", "all", "--duration", "5m"}
	code, out := runCmd(t, args...)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "digest ") || len(last) != len("digest ")+64 {
		t.Fatalf("last line %q, want the digest", last)
	}
	if _, again := runCmd(t, args...); again != out {
		t.Fatalf("the same seed printed\n%s\nthen\n%s", out, again)
	}
}

func TestBadFlagsAreUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"--faults", "meteor"}, {"--agents", "1"}, {"--topology", "moon"}, {"--sizes", "4,x"}} {
		if code, out := runCmd(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2:\n%s", args, code, out)
		}
	}
}

// TestReplayCommandReplays: the command a violation prints runs the same
// configuration: its flags parse back to it.
func TestReplayCommandReplays(t *testing.T) {
	cfg := sim.DefaultConfig(300, 12, 9)
	f, err := sim.DefaultFaults([]string{"all"})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Faults = f
	cfg.Rounds = 12
	cmd := strings.Fields(sim.ReplayCommand(cfg))
	if len(cmd) < 3 || cmd[0] != "go" || cmd[2] != "./testnet/cmd/sim" {
		t.Fatalf("replay %q", cmd)
	}
	got, _, err := parse(cmd[3:], io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, cfg) {
		t.Fatalf("the replay's flags give\n%+v\nwant\n%+v", got, cfg)
	}
}
