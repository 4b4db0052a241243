//go:build linux

package proc

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"
)

// BenchmarkSandboxStart measures what the sandbox adds to running a
// process: plain (no shim), with limits only (the shim), and in a sandbox
// of its own (uid, cgroup, and a network namespace unless hostnet) made and
// closed each time.
//
//	go test ./worker/proc -run '^$' -bench SandboxStart -benchtime 200x
func BenchmarkSandboxStart(b *testing.B) {
	for _, mode := range []string{"plain", "limits", "sandbox-hostnet", "sandbox"} {
		b.Run(mode, func(b *testing.B) {
			var r *osRunner
			if mode == "sandbox" || mode == "sandbox-hostnet" {
				r = sandboxRunner(b)
				r.netns = r.netns && mode == "sandbox"
			} else {
				r = NewRunner(testConfig()).(*osRunner)
			}
			base := reachableBase(b)
			b.ResetTimer()
			for i := range b.N {
				name := "job-" + strconv.Itoa(i)
				s := Spec{Job: name, Size: 1, Dir: filepath.Join(base, name), Program: "/bin/true"}
				if mode == "limits" {
					s.Limits = Limits{OpenFiles: 64}
				}
				var sb *Sandbox
				if r.cgroups != nil {
					var err error
					if sb, err = r.NewSandbox(name, Resources{MemoryBytes: 64 << 20, Pids: 64, CPUs: 1}); err != nil {
						b.Fatal(err)
					}
					s.Sandbox = sb
				}
				p, err := r.Start(context.Background(), s, nil)
				if err != nil {
					b.Fatal(err)
				}
				if e := p.Wait(); !e.Success() {
					b.Fatalf("exit %s", e)
				}
				if sb != nil {
					if err := sb.Close(); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
