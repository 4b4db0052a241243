package mpi_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/mpi"
	"github.com/zorilla-p2p/zorilla/mpi/internal/proto"
)

// envChild makes the test binary a rank process that sends 1 MiB messages
// to rank 0 until it is killed (see TestShmKilledWriter), or with the value
// "reader" one that only waits in a receive (TestShmKilledReader).
const envChild = "ZORILLA_TEST_SHM_WRITER"

func init() {
	if os.Getenv(envChild) == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := mpi.Init(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	if os.Getenv(envChild) == "alltoallv" { // exchanges 1 MiB blocks with rank 0 until killed
		send, recv := make([]int32, 2*engineBlock), make([]int32, 2*engineBlock)
		for {
			if err := mpi.Alltoall(mpi.World(), send, recv); err != nil {
				fmt.Fprintln(os.Stderr, "child:", err)
				os.Exit(3)
			}
		}
	}
	if os.Getenv(envChild) == "reader" { // waits in a receive nobody answers
		_, err := mpi.Recv(mpi.World(), make([]byte, 1), 0, 99)
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(3)
	}
	msg := make([]byte, 1<<20)
	for i := 0; ; i++ {
		msg[0] = byte(i)
		if err := mpi.Send(mpi.World(), msg, 0, 1); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(3)
		}
	}
}

// TestShmGarbage: a rank writes what the rules forbid into its ring to
// another rank on its agent; the receiver refuses it, the job fails with
// the reason (no hang, no crash), and another job on the same agent,
// running at the same time, is untouched.
func TestShmGarbage(t *testing.T) {
	frame := func(h proto.MsgHeader, data int) []byte {
		return append(proto.MsgFrame(&h, data), make([]byte, data)...)
	}
	healthy := make(chan error, 1)
	stop := make(chan struct{})
	go func() {
		errs := runErrs(t, 3, placements["one agent"], func(c *mpi.Comm) error {
			for i := 0; ; i++ {
				if _, err := mpi.Sendrecv(c, []int64{int64(i)}, (c.Rank()+1)%3, 0, make([]int64, 1), (c.Rank()+2)%3, 0); err != nil {
					return err
				}
				done := []int32{0}
				if c.Rank() == 0 {
					select {
					case <-stop:
						done[0] = 1
					default:
					}
				}
				if err := mpi.Bcast(c, done, 0); err != nil || done[0] == 1 {
					return err
				}
			}
		})
		healthy <- errors.Join(errs...)
	}()
	for name, junk := range map[string][]byte{
		"random bytes":       []byte("\xff\xff\xff\x7f\x04garbage that is no frame at all"),
		"not a message":      proto.NewFrame(proto.TypeFinalize, 0),
		"sequence skipped":   frame(proto.MsgHeader{Dst: 1, Seq: 5, Total: 3}, 3),
		"for another rank":   frame(proto.MsgHeader{Dst: 0, Total: 1}, 1),
		"fragment first":     frame(proto.MsgHeader{Dst: 1, Total: 10, Offset: 4}, 3),
		"longer than stated": frame(proto.MsgHeader{Dst: 1, Total: 1}, 2),
	} {
		t.Run(name, func(t *testing.T) {
			errs := runErrs(t, 2, placements["one agent"], func(c *mpi.Comm) error {
				if c.Rank() == 0 {
					if err := c.ScribbleShm(1, junk); err != nil {
						return err
					}
				}
				_, err := mpi.Recv(c, make([]byte, 10), 1-c.Rank(), 0)
				return err
			})
			for r, err := range errs {
				var je *mpi.JobError
				if !errors.As(err, &je) || !strings.Contains(je.Reason, "shared memory") {
					t.Errorf("rank %d: %v, want a job failure about shared memory", r, err)
				}
			}
		})
	}
	close(stop)
	if err := <-healthy; err != nil {
		t.Fatalf("the other job: %v", err)
	}
	run(t, 4, placements["one agent"], func(c *mpi.Comm) error { return c.Barrier() })
}

// TestShmKilledWriter: a rank process on the same agent is killed (SIGKILL)
// while it streams 1 MiB messages to the other rank, single-copy (the
// receiver copying out of its memory) and copied through the ring; the
// other rank's blocked calls fail within the bounded time, and when the
// job is over no ring is left: no memfd in this process (the agent's) file
// table or mappings, nothing in /dev/shm.
func TestShmKilledWriter(t *testing.T) { bothCopyModes(t, killedWriter) }

func killedWriter(t *testing.T) {
	// Only names of ours: other programs on this machine (NetPIPE over Open
	// MPI or MPICH in a bench beside the test) come and go in /dev/shm.
	devShm := func() []string { names, _ := filepath.Glob("/dev/shm/*zorilla*"); return names }
	before := devShm()
	buf := make([]byte, 1<<20)
	recv := func(s *mpi.Session) error {
		_, err := mpi.Recv(s.World(), buf, 1, 1)
		return err
	}
	killPeer(t, "writer", "receive", func(s *mpi.Session) error {
		if got := s.World().ShmPeers(); !slices.Equal(got, []int{1}) {
			return fmt.Errorf("shared memory with %v", got)
		}
		for i := 0; i < 20; i++ { // the stream runs
			if err := recv(s); err != nil {
				return err
			}
		}
		single, got := os.Getenv(mpi.EnvCmaMin) != "", s.World().CmaIn()
		if single && got < 20 || !single && got != 0 {
			return fmt.Errorf("%d of 20 messages from another process single-copy (want all: %v)", got, single)
		}
		return nil
	}, recv)
	if after := devShm(); !slices.Equal(after, before) {
		t.Fatalf("/dev/shm was %v, is %v", before, after)
	}
}

// killPeer runs a job of two ranks on one agent: rank 1 this test binary
// in mode (startChild), rank 0 here. Once warm has run on rank 0, rank 1
// is killed (SIGKILL) and rank 0 repeats call until it fails, which must
// be within the bounded time and name rank 1 as lost; when the job is
// over no ring is left. what names call in the messages.
func killPeer(t *testing.T, mode, what string, warm, call func(*mpi.Session) error) {
	t.Helper()
	j, err := cluster.AddJob(2, func(int) int { return 0 })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	child := startChild(t, ctx, j.Opts[1], mode)
	type result struct {
		err     error
		elapsed time.Duration
	}
	res := make(chan result, 1)
	go func() {
		s, err := mpi.InitWith(ctx, j.Opts[0])
		if err == nil {
			err = warm(s)
		}
		if err == nil {
			err = child.Process.Kill()
		}
		if err != nil {
			res <- result{err: err}
			return
		}
		killed := time.Now()
		for {
			if err := call(s); err != nil {
				res <- result{err: err, elapsed: time.Since(killed)}
				return
			}
		}
	}()
	if err := j.Release(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-res
	var je *mpi.JobError
	if !errors.As(r.err, &je) || je.Rank != 1 {
		t.Fatalf("rank 0: %v, want rank 1 lost", r.err)
	}
	if r.elapsed > 5*time.Second {
		t.Fatalf("rank 0's %s failed %v after rank 1 was killed", what, r.elapsed)
	}
	_ = child.Wait()
	j.Remove()
	waitNoRings(t)
}

// engineBlock is the int32s a block of TestShmEngineKilledPeer: 1 MiB,
// the size of a ring, so blocks wait for room.
const engineBlock = 256 << 10

// TestShmEngineKilledPeer: a rank process exchanging blocks with rank 0
// through the exchange engine (Alltoall on one agent) is killed (SIGKILL);
// rank 0's exchange fails within the bounded time with the lost rank, and
// no ring is left when the job is over.
func TestShmEngineKilledPeer(t *testing.T) {
	send, recv := make([]int32, 2*engineBlock), make([]int32, 2*engineBlock)
	exchange := func(s *mpi.Session) error { return mpi.Alltoall(s.World(), send, recv) }
	killPeer(t, "alltoallv", "exchange", func(s *mpi.Session) error {
		for i := 0; i < 10; i++ { // the exchanges run
			if err := exchange(s); err != nil {
				return err
			}
		}
		if s.World().EngineRuns() == 0 {
			return errors.New("10 exchanges on one agent, none through the engine")
		}
		return nil
	}, exchange)
}

// startChild starts this test binary as rank opt.Rank in the given mode;
// it is killed at the end of the test.
func startChild(t *testing.T, ctx context.Context, o mpi.Options, mode string) *exec.Cmd {
	t.Helper()
	child := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), envChild+"="+mode, mpi.EnvSocket+"="+o.Socket, mpi.EnvJob+"="+o.Job,
		mpi.EnvKey+"="+o.Key, mpi.EnvRank+"="+strconv.Itoa(o.Rank), mpi.EnvSize+"="+strconv.Itoa(o.Size), mpi.EnvReplica+"=0")
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = child.Process.Kill()
		_ = child.Wait()
	})
	return child
}

// TestShmKilledReader: rank 0 sends 8 MiB to a rank on its agent that is
// stopped (SIGSTOP), so the send waits for the reader: for its copy out of
// the sender's memory (single-copy), or for room in the full ring
// (copies); the stopped rank is then killed, and the send fails within the
// bounded time.
func TestShmKilledReader(t *testing.T) { bothCopyModes(t, killedReader) }

func killedReader(t *testing.T) {
	j, err := cluster.AddJob(2, func(int) int { return 0 })
	if err != nil {
		t.Fatal(err)
	}
	defer j.Remove()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	child := startChild(t, ctx, j.Opts[1], "reader")
	ready := make(chan *mpi.Session, 1)
	go func() {
		s, err := mpi.InitWith(ctx, j.Opts[0])
		if err != nil {
			t.Error(err)
		}
		ready <- s
	}()
	if err := j.Release(ctx); err != nil {
		t.Fatal(err)
	}
	s := <-ready
	if s == nil {
		return
	}
	if got := s.World().ShmPeers(); !slices.Equal(got, []int{1}) {
		t.Fatalf("shared memory with %v", got)
	}
	if err := child.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	req := mpi.Isend(s.World(), make([]byte, 8<<20), 1, 1)
	if done, _, err := req.Test(); done {
		t.Fatalf("8 MiB reached a stopped rank (%v)", err)
	}
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	_, err = req.Wait()
	var je *mpi.JobError
	if !errors.As(err, &je) || je.Rank != 1 {
		t.Fatalf("send: %v, want rank 1 lost", err)
	}
	if took := time.Since(killed); took > 5*time.Second {
		t.Fatalf("the send failed %v after rank 1 was killed", took)
	}
}

// waitNoRings waits until this process (the agents, and the in-process
// ranks) holds no ring file and maps no ring.
func waitNoRings(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := rings()
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("rings left: %v", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func rings() []string {
	var left []string
	fds, _ := os.ReadDir("/proc/self/fd")
	for _, fd := range fds {
		if l, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && strings.Contains(l, "zorilla-mpi") {
			left = append(left, "fd "+fd.Name()+" "+l)
		}
	}
	maps, _ := os.ReadFile("/proc/self/maps")
	for _, line := range strings.Split(string(maps), "\n") {
		if strings.Contains(line, "zorilla-mpi") {
			left = append(left, "map "+line)
		}
	}
	return left
}
