package main

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// commandPaths lists the argument paths of every command and subcommand,
// e.g. ["testnet", "up"].
func commandPaths(prefix []string, cmds []*cli.Command) [][]string {
	var out [][]string
	for _, c := range cmds {
		p := append(append([]string(nil), prefix...), c.Name)
		out = append(out, p)
		out = append(out, commandPaths(p, c.Subcommands)...)
	}
	return out
}

// TestHelpSaysEachDefaultOnce scans every command's help for a flag whose
// default is printed twice: once in its usage, once by urfave/cli.
func TestHelpSaysEachDefaultOnce(t *testing.T) {
	paths := append([][]string{nil}, commandPaths(nil, newApp(io.Discard, io.Discard).Commands)...)
	if len(paths) < 20 {
		t.Fatalf("found only %d commands: %v", len(paths), paths)
	}
	for _, p := range paths {
		var out, errw bytes.Buffer
		args := append(append([]string{"zorilla"}, p...), "--help")
		if code := run(args, &out, &errw); code != 0 {
			t.Errorf("%v: exit %d, stderr %q", args, code, errw.String())
			continue
		}
		if !strings.Contains(out.String(), "USAGE:") {
			t.Errorf("%v printed no help:\n%s", args, out.String())
		}
		for _, line := range strings.Split(out.String(), "\n") {
			if strings.Count(strings.ToLower(line), "(default") > 1 {
				t.Errorf("zorilla %s --help says a default twice:\n%s", strings.Join(p, " "), line)
			}
		}
	}
}
