package shm

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// envEcho makes the test binary the echo side of BenchmarkPingpongProcesses:
// it maps the rings passed as files 3 (to read) and 4 (to write) and sends
// back every 8-byte message until it reads a zero. With the value "spin",
// it spins on Pending before each read (BenchmarkPingpongSpin).
const envEcho = "ZORILLA_SHM_ECHO"

func init() {
	if os.Getenv(envEcho) == "" {
		return
	}
	in, err := Map(3)
	if err == nil {
		var out *Ring
		if out, err = Map(4); err == nil {
			err = echo(in, out, os.Getenv(envEcho) == "spin")
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "echo:", err)
		os.Exit(2)
	}
	os.Exit(0)
}

func echo(in, out *Ring, spin bool) error {
	var msg [8]byte
	for {
		if spin && !spinPending(in) {
			return fmt.Errorf("no message within %v", floorGiveUp)
		}
		if err := readFull(in, msg[:]); err != nil {
			return err
		}
		if binary.LittleEndian.Uint64(msg[:]) == 0 {
			return nil
		}
		if err := out.Write(msg[:], never); err != nil {
			return err
		}
	}
}

func readFull(r *Ring, p []byte) error {
	for len(p) > 0 {
		n, err := r.Read(p, never)
		if err != nil {
			return err
		}
		p = p[n:]
	}
	return nil
}

// BenchmarkPingpongProcesses: one-way time of an 8-byte ping-pong between
// two processes over two rings, each side waiting as the library does (a
// 50 µs poll that yields as the machine's load asks, then a futex): the
// floor under the MPI library's co-located latency, with no matching, no
// frames and no goroutines between.
func BenchmarkPingpongProcesses(b *testing.B) { pingpong(b, "1") }

// BenchmarkPingpongSpin: the same, but each side spins on Pending before it
// reads, never yielding: the rings' own cost (the cache lines a message
// moves, the work of a write and a read) above BenchmarkPingpongFloor's,
// without the poll's yields, which a loaded machine makes frequent.
func BenchmarkPingpongSpin(b *testing.B) { pingpong(b, "spin") }

// spinPending spins until the ring holds data, or floorGiveUp passed.
func spinPending(r *Ring) bool { return spinUntil(r.Pending) }

func pingpong(b *testing.B, mode string) {
	files := make([]*os.File, 2)
	for i := range files {
		f, err := Create("bench", MinCap)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		files[i] = f
	}
	out, err := Map(int(files[0].Fd()))
	if err != nil {
		b.Fatal(err)
	}
	defer out.Unmap()
	in, err := Map(int(files[1].Fd()))
	if err != nil {
		b.Fatal(err)
	}
	defer in.Unmap()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envEcho+"="+mode)
	cmd.ExtraFiles = files // 3: what we write, 4: what it writes
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	var msg [8]byte
	b.ResetTimer()
	for i := 1; i <= b.N; i++ {
		binary.LittleEndian.PutUint64(msg[:], uint64(i))
		if err := out.Write(msg[:], never); err != nil {
			b.Fatal(err)
		}
		if mode == "spin" && !spinPending(in) {
			b.Fatalf("no echo within %v", floorGiveUp)
		}
		if err := readFull(in, msg[:]); err != nil {
			b.Fatal(err)
		}
		if got := binary.LittleEndian.Uint64(msg[:]); got != uint64(i) {
			b.Fatalf("echo %d, want %d", got, i)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(2*b.N)/1000, "us/one-way")
	clear(msg[:])
	if err := out.Write(msg[:], never); err != nil {
		b.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		b.Fatal(err)
	}
}
