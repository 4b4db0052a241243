package testnet

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/job/submitter"
	"github.com/zorilla-p2p/zorilla/node"
)

// The launch figures (BENCHMARKS.md), on the 16-agent loopback
// testnet of TestLaunch16 (4 slots per agent):
//
//	go test ./testnet -run '^$' -bench 'Launch' -benchtime 5x -timeout 30m
//
// Each job's times come from its record's history, as the submitter
// stamped them; every metric is the median over the b.N jobs of a run.

// BenchmarkLaunchSubmitToRunning times submit to all ranks running
// (Running's time minus Waiting's), split into the reservation (flood,
// offers, placement: Waiting to Starting) and the two-phase start's first
// phase (commit, staging, fork: Starting to Running), with a real agent's
// submitter settings ("default": floods 1 s, 2 s, ... apart, 300 ms of
// grace) and the tests' ("fast": 100 ms, 200 ms, ..., radius 4 at most).
func BenchmarkLaunchSubmitToRunning(b *testing.B) {
	profiles := []struct {
		name string
		cfg  submitter.Config
	}{{"default", submitter.DefaultConfig()}, {"fast", launchSubmitter()}}
	cases := []struct {
		s job.Strategy
		n int
	}{{job.Concentrate, 16}, {job.Spread, 16}, {job.Concentrate, 64}, {job.Spread, 64}}
	for _, p := range profiles {
		b.Run(p.name, func(b *testing.B) {
			ln := startLaunchNet(b, 16, 4, func(_ int, cfg *node.Config) { cfg.Services.Submitter = p.cfg })
			prog := uploadScript(b, ln.Nodes[0], "exit 0")
			for _, c := range cases {
				b.Run(fmt.Sprintf("%s/n=%d", c.s, c.n), func(b *testing.B) {
					d := job.NewDescription("prog.sh", nil, c.n)
					d.Strategy = c.s
					var total, reserve, start []time.Duration
					for range b.N {
						at := ln.launchTimes(b, d, prog)
						total = append(total, at[job.Running].Sub(at[job.Waiting]))
						reserve = append(reserve, at[job.Starting].Sub(at[job.Waiting]))
						start = append(start, at[job.Running].Sub(at[job.Starting]))
					}
					b.ReportMetric(medianMS(total), "ms-to-running")
					b.ReportMetric(medianMS(reserve), "ms-reserving")
					b.ReportMetric(medianMS(start), "ms-starting")
					b.Logf("submit to running: %v", total)
				})
			}
		})
	}
}

// BenchmarkLaunchProgram20MB times the distribution of a 20 MB program to
// 16 hosts: a job of 16 processes spread over the 16 agents, from Starting
// to Running (every host has fetched it from the submitter, verified its
// sha256, stored it, copied it into the job folder, and started it). Each
// job has a program never seen before, so every host fetches it. The
// baselines copy the same 20 MB 16 times, one after the other, on the local
// disk: plainly, then with a worker's staging work (into the blob store
// hashing, then hashed again into the job folder), without and with the
// store's fsync.
func BenchmarkLaunchProgram20MB(b *testing.B) {
	const size = 20 << 20
	b.Run("testnet", func(b *testing.B) {
		ln := startLaunchNet(b, 16, 4, nil)
		d := job.NewDescription("prog.sh", nil, 16)
		d.Strategy = job.Spread
		var start []time.Duration
		for range b.N {
			prog := uploadBigScript(b, ln, size)
			at := ln.launchTimes(b, d, prog)
			start = append(start, at[job.Running].Sub(at[job.Starting]))
		}
		b.ReportMetric(medianMS(start), "ms-starting")
		b.ReportMetric(16*size/1e6/(medianMS(start)/1e3), "MB/s")
		b.Logf("starting to running: %v", start)
	})
	for _, mode := range []copyMode{plainCopy, storeCopy, syncedStoreCopy} {
		b.Run("local-copy/"+mode.String(), func(b *testing.B) {
			src := filepath.Join(b.TempDir(), "src")
			writeRandom(b, src, size)
			var took []time.Duration
			for range b.N {
				dir := b.TempDir()
				t0 := time.Now()
				for i := range 16 {
					copyFile(b, src, filepath.Join(dir, fmt.Sprint(i)), mode)
				}
				took = append(took, time.Since(t0))
			}
			b.ReportMetric(medianMS(took), "ms-16-copies")
			b.ReportMetric(16*size/1e6/(medianMS(took)/1e3), "MB/s")
		})
	}
}

// launchTimes runs d with prog through agent 0, checks that it ran, waits
// until every agent is idle again, and returns when the job entered each
// state.
func (ln *launchNet) launchTimes(b *testing.B, d job.Description, prog proto.FileRef) map[job.State]time.Time {
	b.Helper()
	rec := submitJob(b, ln.Nodes[0], d, prog).wait(b)
	if rec.State != job.Done {
		b.Fatalf("job ended %s: %s", rec.State, rec.Reason)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := ln.Await(ctx, "every agent idle", func() bool {
		for _, nd := range ln.Nodes {
			if len(nd.Leases().List()) > 0 {
				return false
			}
		}
		return true
	}); err != nil {
		b.Fatal(err)
	}
	return firstEntered(rec)
}

// uploadBigScript uploads to agent 0 a shell script of size bytes that
// exits at once: its first lines, then a comment of random bytes (so its
// hash is new, and no agent holds it yet).
func uploadBigScript(b *testing.B, ln *launchNet, size int) proto.FileRef {
	b.Helper()
	path := filepath.Join(b.TempDir(), "prog.sh")
	head := "#!/bin/sh\nexit 0\n#"
	pad := make([]byte, size-len(head))
	_, _ = rand.Read(pad)
	for i, c := range pad {
		if c == '\n' {
			pad[i] = ' '
		}
	}
	if err := os.WriteFile(path, append([]byte(head), pad...), 0o755); err != nil {
		b.Fatal(err)
	}
	h, n, err := ln.Nodes[0].Blobs().PutFile(path)
	if err != nil {
		b.Fatal(err)
	}
	return proto.FileRef{Name: "prog.sh", Hash: h.String(), Size: n}
}

func writeRandom(b *testing.B, path string, size int) {
	b.Helper()
	buf := make([]byte, size)
	_, _ = rand.Read(buf)
	if err := os.WriteFile(path, buf, 0o600); err != nil {
		b.Fatal(err)
	}
}

// copyMode is how much of a worker's staging work a local copy does.
type copyMode int

const (
	plainCopy       copyMode = iota // read and write
	storeCopy                       // into the store hashing, then hashed again into the job folder
	syncedStoreCopy                 // the same, with the store's fsync
)

func (m copyMode) String() string {
	return [...]string{"plain", "hashed-twice", "hashed-twice+fsync"}[m]
}

// copyFile copies src to dst as mode says.
func copyFile(b *testing.B, src, dst string, mode copyMode) {
	b.Helper()
	write := func(from, to string, hash, sync bool) {
		in, err := os.Open(from)
		if err != nil {
			b.Fatal(err)
		}
		defer in.Close()
		out, err := os.Create(to)
		if err != nil {
			b.Fatal(err)
		}
		var w io.Writer = out
		if hash {
			w = io.MultiWriter(out, sha256.New())
		}
		if _, err := io.Copy(w, in); err != nil {
			b.Fatal(err)
		}
		if sync {
			if err := out.Sync(); err != nil {
				b.Fatal(err)
			}
		}
		if err := out.Close(); err != nil {
			b.Fatal(err)
		}
	}
	if mode == plainCopy {
		write(src, dst, false, false)
		return
	}
	write(src, dst, true, mode == syncedStoreCopy)
	write(dst, dst+".job", true, false)
}

func medianMS(ds []time.Duration) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return float64(m) / float64(time.Millisecond)
}
