package mpi

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/mpi/internal/shm"
)

// envShmEcho makes the test binary rank 1 of BenchmarkShmPathProcesses: it
// maps the rings passed as files 3 (from rank 0) and 4 (to rank 0), and
// sends back every 8-byte message it receives until one holds zero.
const envShmEcho = "ZORILLA_MPI_SHM_ECHO"

func init() {
	if os.Getenv(envShmEcho) == "" {
		return
	}
	if err := shmEcho(); err != nil {
		fmt.Fprintln(os.Stderr, "echo:", err)
		os.Exit(2)
	}
	os.Exit(0)
}

// ringSession is rank rank of a 2-rank job whose rings to and from the
// other rank are the files out and in, with its standby reader running,
// as after ShmOn; stop ends it.
func ringSession(rank, out, in int) (s *Session, stop func(), err error) {
	s = testSession(2)
	s.rank, s.world.rank, s.maxData = rank, rank, 512<<10
	s.shm.poll = shmPollTime // as shmOn sets it on a host with a core for each rank
	w, err := shm.Map(out)
	if err != nil {
		return nil, nil, err
	}
	r, err := shm.Map(in)
	if err != nil {
		w.Unmap()
		return nil, nil, err
	}
	other := 1 - rank
	s.shm.out, s.shm.in = make([]*shm.Ring, 2), make([]*inRing, 2)
	s.shm.out[other] = w
	s.shm.in[other] = &inRing{src: other, r: r}
	s.shm.list = []*inRing{s.shm.in[other]}
	s.shm.readers.Add(1)
	go s.shmReadLoop(s.shm.in[other])
	return s, func() {
		end(s, ErrAgentLost)
		s.shm.readers.Wait()
		w.Unmap()
		r.Unmap()
	}, nil
}

func shmEcho() error {
	s, stop, err := ringSession(1, 4, 3)
	if err != nil {
		return err
	}
	defer stop()
	msg := make([]byte, 8)
	for {
		if _, err := Recv(s.world, msg, 0, 3); err != nil {
			return err
		}
		if binary.LittleEndian.Uint64(msg) == 0 {
			return nil
		}
		if err := Send(s.world, msg, 0, 3); err != nil {
			return err
		}
	}
}

// BenchmarkShmPathProcesses: one-way time of an 8-byte ping-pong between
// two processes, ranks 0 and 1 of a job joined by two rings as the agent
// would join them (but no agent): the whole co-located path of Send and
// Recv, polls and standby readers included, without the agent's start-up
// and the bench's other runs around it (zorilla bench pingpong --colocated).
func BenchmarkShmPathProcesses(b *testing.B) {
	files := make([]*os.File, 2) // 0: rank 0 to rank 1, 1: back
	for i := range files {
		f, err := shm.Create("bench", 1<<20)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		files[i] = f
	}
	s, stop, err := ringSession(0, int(files[0].Fd()), int(files[1].Fd()))
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envShmEcho+"=1")
	cmd.ExtraFiles = files
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	msg := make([]byte, 8)
	rtt := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 1; i <= b.N; i++ {
		t0 := time.Now()
		binary.LittleEndian.PutUint64(msg, uint64(i))
		if err := Send(s.world, msg, 1, 3); err != nil {
			b.Fatal(err)
		}
		if _, err := Recv(s.world, msg, 1, 3); err != nil {
			b.Fatal(err)
		}
		if got := binary.LittleEndian.Uint64(msg); got != uint64(i) {
			b.Fatalf("echo %d, want %d", got, i)
		}
		rtt = append(rtt, time.Since(t0))
	}
	b.StopTimer()
	reportTail(b, rtt)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(2*b.N)/1000, "us/one-way")
	clear(msg)
	if err := Send(s.world, msg, 1, 3); err != nil {
		b.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		b.Fatal(err)
	}
}

// reportTail reports the one-way times of the median, 90th and 99th
// percentile round trip, and the share of the time spent in round trips
// slower than 20 µs: on a VM the mean is mostly a tail of stalls (the
// median round trip can be a tenth of it), which the mean alone hides.
func reportTail(b *testing.B, rtt []time.Duration) {
	if len(rtt) == 0 {
		return
	}
	slices.Sort(rtt)
	var slow, all time.Duration
	for _, d := range rtt {
		all += d
		if d > 20*time.Microsecond {
			slow += d
		}
	}
	oneWay := func(q int) float64 { return float64(rtt[len(rtt)*q/100].Nanoseconds()) / 2000 }
	b.ReportMetric(oneWay(50), "us-p50")
	b.ReportMetric(oneWay(90), "us-p90")
	b.ReportMetric(oneWay(99), "us-p99")
	b.ReportMetric(float64(slow)/float64(all), "stalled")
}
