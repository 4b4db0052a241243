package shm

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestReadFrom: process_vm_readv works here on this process; a bad address
// is an error (EFAULT), not a fault; a process that is gone is ErrPeerGone.
func TestReadFrom(t *testing.T) {
	src := bytes.Repeat([]byte("single copy "), 100_000)
	dst := make([]byte, len(src))
	if err := ReadFrom(os.Getpid(), uint64(uintptr(unsafe.Pointer(&src[0]))), dst); err != nil {
		t.Fatalf("read this process: %v", err)
	}
	if !bytes.Equal(dst, src) {
		t.Fatal("read the wrong bytes")
	}
	err := ReadFrom(os.Getpid(), 4096, dst[:100])
	if !errors.Is(err, unix.EFAULT) {
		t.Fatalf("read at 4096: %v, want EFAULT", err)
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip("no true(1):", err)
	}
	if err := ReadFrom(cmd.Process.Pid, 4096, dst[:1]); !errors.Is(err, ErrPeerGone) {
		t.Fatalf("read an exited process: %v, want ErrPeerGone", err)
	}
}

// TestCheckWriter: the reader accepts the pid and identity address its
// writer gives, and refuses another address (as a pid of another process
// would give).
func TestCheckWriter(t *testing.T) {
	w, r := pair(t, MinCap)
	addr := w.Ident()
	if err := r.CheckWriter(os.Getpid(), addr); err != nil {
		t.Fatal(err)
	}
	other := uint64(0x1234)
	if err := r.CheckWriter(os.Getpid(), uint64(uintptr(unsafe.Pointer(&other)))); !errors.Is(err, ErrNotWriter) {
		t.Fatalf("check against another word: %v, want ErrNotWriter", err)
	}
}

// TestAck: the writer waits for its token's completion, sleeping on the
// futex; a refusal says so; a completion word naming another rendezvous is
// ErrCorrupt; a reader gone releases the writer; a dead session (check)
// ends the wait.
func TestAck(t *testing.T) {
	w, r := pair(t, MinCap)
	for _, ok := range []bool{true, false} {
		tok := w.NextToken()
		// The goroutine acks once the writer sleeps, so the futex wake is
		// what ends its wait; the ring is unmapped after it is done.
		acked := make(chan struct{})
		go func() {
			defer close(acked)
			for deadline := time.Now().Add(10 * time.Second); atomic.LoadUint32(r.u32(offASleep)) == 0 && time.Now().Before(deadline); {
				runtime.Gosched()
			}
			r.Ack(tok, ok)
		}()
		got, err := w.WaitAck(tok, 0, never)
		<-acked
		if err != nil || got != ok {
			t.Fatalf("token %d: %v %v, want %v", tok, got, err, ok)
		}
	}
	tok := w.NextToken()
	r.Ack(tok+5, true)
	if _, err := w.WaitAck(tok, 0, never); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("completion of another token: %v, want ErrCorrupt", err)
	}
	r.Ack(tok-1, true)
	dead := errors.New("session ended")
	start := time.Now()
	if _, err := w.WaitAck(tok, 0, func() error { return dead }); !errors.Is(err, dead) {
		t.Fatalf("wait with a dead session: %v", err)
	}
	if took := time.Since(start); took > 5*Nap {
		t.Fatalf("the wait took %v to notice its check", took)
	}
	r.CloseRead()
	if ok, err := w.WaitAck(tok, 0, never); !ok || err != nil {
		t.Fatalf("reader gone: %v %v", ok, err)
	}
}

// TestMapRefusesOtherLayout: a ring of another layout version (1 had no
// rendezvous, 2 a head position the reader polled) is refused with both
// versions named.
func TestMapRefusesOtherLayout(t *testing.T) {
	for _, v := range []byte{1, 2, layout + 1} {
		f, err := Create("test", MinCap)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := unix.Pwrite(int(f.Fd()), []byte{v, 0, 0, 0}, offVersion); err != nil {
			t.Fatal(err)
		}
		_, err = Map(int(f.Fd()))
		want := fmt.Sprintf("version %d, this library speaks version %d", v, layout)
		if !errors.Is(err, ErrBadRing) || !strings.Contains(err.Error(), want) {
			t.Fatalf("map of a version %d ring: %v", v, err)
		}
	}
}

// BenchmarkReadFrom: process_vm_readv of this process's memory against a
// plain copy of the same bytes, the two ways a large message's bytes can
// move (single-copy, or through the ring).
func BenchmarkReadFrom(b *testing.B) {
	for _, n := range []int{64 << 10, 1 << 20, 8 << 20} {
		src, dst := make([]byte, n), make([]byte, n)
		for i := range src {
			src[i] = byte(i)
		}
		addr := uint64(uintptr(unsafe.Pointer(&src[0])))
		b.Run(fmt.Sprintf("process_vm_readv/%d", n), func(b *testing.B) {
			b.SetBytes(int64(n))
			for range b.N {
				if err := ReadFrom(os.Getpid(), addr, dst); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("copy/%d", n), func(b *testing.B) {
			b.SetBytes(int64(n))
			for range b.N {
				copy(dst, src)
			}
		})
	}
}
