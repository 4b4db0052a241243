package pmi

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// buildMPI compiles testdata/NAME.c with Debian's MPICH, or skips.
func buildMPI(t testing.TB, name string) string {
	t.Helper()
	cc, err := exec.LookPath("mpicc.mpich")
	if err != nil {
		t.Skip("mpicc.mpich not found: install Debian's mpich and libmpich-dev")
	}
	out := filepath.Join(t.TempDir(), name)
	if b, err := exec.Command(cc, "-O2", "-o", out, filepath.Join("testdata", name+".c")).CombinedOutput(); err != nil {
		t.Fatalf("mpicc %s: %v\n%s", name, err, b)
	}
	return out
}

// localRun is a job's ranks started as processes of the test, each
// served by Serve on a socket pair, the hosts' fences joined in memory.
type localRun struct {
	out      bytes.Buffer
	mu       sync.Mutex
	aborts   []int
	sessions []Session
	errs     []error
	kill     context.CancelFunc
}

type abortJob struct {
	*Fence
	run *localRun
}

func (a abortJob) Abort(rank, code int, _ string) {
	a.run.mu.Lock()
	a.run.aborts = append(a.run.aborts, rank)
	a.run.mu.Unlock()
	a.run.kill()
}

// runLocal runs prog on len(hostOf) ranks, rank r on pretend host
// hostOf[r], and returns when every process has ended.
func runLocal(t *testing.T, prog string, hostOf []int, args ...string) (*localRun, []error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	nh := 0
	for _, h := range hostOf {
		nh = max(nh, h+1)
	}
	hosts := make([]peer.ID, nh)
	for i := range hosts {
		hosts[i] = peer.ID(fmt.Sprintf("host-%d", i))
	}
	fences := make([]*Fence, nh)
	send := func(ctx context.Context, to peer.ID, m Msg) error {
		for i, h := range hosts {
			if h == to {
				return fences[i].Deliver(hosts[m.From], m)
			}
		}
		return fmt.Errorf("no host %s", to)
	}
	for h := range nh {
		var local []int
		for r, hr := range hostOf {
			if hr == h {
				local = append(local, r)
			}
		}
		f, err := NewFence(FenceSpec{Job: "job", Key: "k", Hosts: hosts, Self: h, Local: local, Fanout: 2}, send)
		if err != nil {
			t.Fatal(err)
		}
		fences[h] = f
		f.Release()
		defer f.Close()
	}
	run := &localRun{sessions: make([]Session, len(hostOf)), errs: make([]error, len(hostOf)), kill: cancel}
	mapping := ProcessMapping(hostOf)
	var wg sync.WaitGroup
	exits := make([]error, len(hostOf))
	for r := range hostOf {
		fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		ours, theirs := os.NewFile(uintptr(fds[0]), "pmi"), os.NewFile(uintptr(fds[1]), "pmi-rank")
		cmd := exec.CommandContext(ctx, prog, args...)
		cmd.Env = append(os.Environ(), "PMI_FD=3", fmt.Sprintf("PMI_RANK=%d", r), fmt.Sprintf("PMI_SIZE=%d", len(hostOf)))
		cmd.ExtraFiles = []*os.File{theirs}
		cmd.Stdout, cmd.Stderr = &syncWriter{&run.mu, &run.out}, &syncWriter{&run.mu, &run.out}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		theirs.Close()
		info := Info{Rank: r, Size: len(hostOf), KVSName: "kvs_job", Mapping: mapping}
		wg.Add(2)
		go func() {
			defer wg.Done()
			run.sessions[r], run.errs[r] = Serve(ctx, ours, info, abortJob{fences[hostOf[r]], run})
		}()
		go func() {
			defer wg.Done()
			exits[r] = cmd.Wait()
		}()
	}
	wg.Wait()
	return run, exits
}

type syncWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func TestMPICHHello(t *testing.T) {
	prog := buildMPI(t, "hello")
	for _, hostOf := range [][]int{{0}, {0, 0}, {0, 1, 0, 1, 2}, {0, 0, 0, 1, 1, 1, 2, 2, 2}} {
		t.Run(fmt.Sprint(hostOf), func(t *testing.T) {
			run, exits := runLocal(t, prog, hostOf)
			for r, err := range exits {
				if err != nil {
					t.Errorf("rank %d: %v (serve: %v)", r, err, run.errs[r])
				}
			}
			t.Logf("%s", run.out.String())
			for r := range hostOf {
				if !strings.Contains(run.out.String(), fmt.Sprintf("hello rank %d of %d", r, len(hostOf))) {
					t.Errorf("rank %d did not say hello", r)
				}
			}
		})
	}
}

func TestMPICHRingAndCollectives(t *testing.T) {
	ring, coll := buildMPI(t, "ring"), buildMPI(t, "coll")
	for _, hostOf := range [][]int{{0}, {0, 1}, {0, 1, 2, 0, 1, 2, 0}, {0, 0, 0, 0, 1, 1, 1, 1, 2}} {
		t.Run(fmt.Sprint(hostOf), func(t *testing.T) {
			for _, prog := range []string{ring, coll} {
				run, exits := runLocal(t, prog, hostOf)
				for r, err := range exits {
					if err != nil {
						t.Errorf("%s rank %d: %v\n%s", filepath.Base(prog), r, err, run.out.String())
					}
				}
				if strings.Contains(run.out.String(), "WRONG") {
					t.Errorf("%s: %s", filepath.Base(prog), run.out.String())
				}
			}
		})
	}
}

func TestMPICHAbort(t *testing.T) {
	prog := buildMPI(t, "fail")
	run, exits := runLocal(t, prog, []int{0, 1, 0, 1}, "abort", "2")
	if len(run.aborts) != 1 || run.aborts[0] != 2 {
		t.Fatalf("aborts reported: %v, want rank 2\n%s", run.aborts, run.out.String())
	}
	if !run.sessions[2].Aborted || exits[2] == nil {
		t.Fatalf("rank 2: session %+v exit %v", run.sessions[2], exits[2])
	}
}
