package shm

import (
	"fmt"
	"os"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// envFloor makes the test binary the peer of BenchmarkPingpongFloor: it
// maps the page passed as file 3 and answers every odd value of its first
// word with the next even one, until it reads the last one.
const envFloor = "ZORILLA_SHM_FLOOR"

// floorGiveUp bounds every wait of the floor's ping-pong: a peer that does
// not answer within it (it died, or never got a core) ends the run.
const floorGiveUp = 10 * time.Second

func init() {
	if os.Getenv(envFloor) == "" {
		return
	}
	if err := floorPeer(3); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(2)
	}
	os.Exit(0)
}

func floorPeer(fd int) error {
	mem, err := unix.Mmap(fd, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("map the page: %w", err)
	}
	word := (*uint64)(unsafe.Pointer(&mem[0]))
	last := atomic.LoadUint64((*uint64)(unsafe.Pointer(&mem[64])))
	for v := uint64(1); v < last; v += 2 {
		if !spinFor(word, v) {
			return fmt.Errorf("no %d within %v", v, floorGiveUp)
		}
		atomic.StoreUint64(word, v+1)
	}
	return nil
}

// spinFor spins on word until it holds v, as a polling process would with
// a core of its own (spinUntil).
func spinFor(word *uint64, v uint64) bool {
	return spinUntil(func() bool { return atomic.LoadUint64(word) == v })
}

// spinUntil spins until done holds: no yield, no clock read but once in
// 1<<16 looks (to give up after floorGiveUp).
func spinUntil(done func() bool) bool {
	var start time.Time
	for i := 1; !done(); i++ {
		if i&(1<<16-1) != 0 {
			continue
		}
		if start.IsZero() {
			start = time.Now()
		} else if time.Since(start) > floorGiveUp {
			return false
		}
	}
	return true
}

// BenchmarkPingpongFloor: the one-way time of a ping-pong between two
// processes that spin on one shared cache line, each writing the value the
// other waits for: the floor of this machine's co-located latency, which
// no ring (which moves more lines, and waits as the library does) beats.
func BenchmarkPingpongFloor(b *testing.B) {
	fd, err := unix.MemfdCreate("floor", unix.MFD_CLOEXEC)
	if err != nil {
		b.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), "floor")
	defer f.Close()
	if err := unix.Ftruncate(fd, 4096); err != nil {
		b.Fatal(err)
	}
	mem, err := unix.Mmap(fd, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Munmap(mem)
	word := (*uint64)(unsafe.Pointer(&mem[0]))
	// The peer's last value, on a line of its own, set before it starts.
	*(*uint64)(unsafe.Pointer(&mem[64])) = 2*uint64(b.N) + 1
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envFloor+"=1")
	cmd.ExtraFiles = []*os.File{f}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		v := 2*uint64(i) + 1
		atomic.StoreUint64(word, v)
		if !spinFor(word, v+1) {
			b.Fatalf("no answer to %d within %v", v, floorGiveUp)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(2*b.N)/1000, "us/one-way")
	if err := cmd.Wait(); err != nil {
		b.Fatal(err)
	}
}
