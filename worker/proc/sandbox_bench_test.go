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

// BenchmarkFreezeThaw measures one Freeze and Thaw of a sandboxed job of a
// shell and three children: with the cgroup v2 freezer (waiting for the
// kernel's frozen 1, then 0) and, on the same processes, with signals
// (SIGSTOP/SIGCONT of the group and of every process of the v1 cgroup).
// -count interleaves the two.
//
//	go test ./worker/proc -run '^$' -bench FreezeThaw -benchtime 200x -count 5
func BenchmarkFreezeThaw(b *testing.B) {
	for _, mode := range []string{"cgroup-v2", "signals"} {
		b.Run(mode, func(b *testing.B) {
			r := sandboxRunner(b)
			if r.cgroups.freezer == "" {
				b.Skipf("no cgroup v2 freezer here (%s)", r.iso.Freezer)
			}
			sb, err := r.NewSandbox("job-freeze", Resources{})
			if err != nil {
				b.Fatal(err)
			}
			defer sb.Close()
			c := newCollector()
			s := Spec{Job: "job-freeze", Size: 1, Dir: filepath.Join(reachableBase(b), "job-freeze"), Program: "/bin/sh",
				Args: []string{"-c", "sleep 60 & sleep 60 & sleep 60 & echo up; wait"}, Sandbox: sb}
			p, err := r.Start(context.Background(), s, c.out)
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = p.Kill(); <-p.Done() }()
			c.waitFor(b, "up")
			if v2 := sb.cg.freezer; mode == "signals" {
				sb.cg.freezer = ""                    // as on a host with no cgroup2 (the processes stay in it, unused)
				defer func() { sb.cg.freezer = v2 }() // so that Close removes it
			}
			ps := []Process{p}
			b.ResetTimer()
			for range b.N {
				if err := Freeze(sb, ps); err != nil {
					b.Fatal(err)
				}
				if err := Thaw(sb, ps); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
		})
	}
}
