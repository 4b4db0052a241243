//go:build linux

package proc

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A program still open for writing somewhere (as a just-staged program is
// in a child another goroutine forks at that moment) makes exec fail with
// ETXTBSY until it is closed; Start keeps trying meanwhile, directly and
// through the limits shim.
func TestStartRetriesBusyProgram(t *testing.T) {
	for name, limits := range map[string]Limits{"direct": {}, "shim": {OpenFiles: 64}} {
		t.Run(name, func(t *testing.T) {
			prog := filepath.Join(t.TempDir(), "prog.sh")
			if err := os.WriteFile(prog, []byte("#!/bin/sh\necho started\n"), 0o700); err != nil {
				t.Fatal(err)
			}
			w, err := os.OpenFile(prog, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			closed := time.AfterFunc(20*time.Millisecond, func() { _ = w.Close() })
			defer closed.Stop()
			s := shSpec(t, "")
			s.Program, s.Args, s.Limits = prog, nil, limits
			c := newCollector()
			p := start(t, testConfig(), s, c)
			if e := wait(t, p); !e.Success() {
				t.Fatalf("exit %s", e)
			}
			if got := c.all(Stdout); len(got) != 1 || got[0] != "started" {
				t.Fatalf("output %q, want the program's", got)
			}
		})
	}
}
