package shm

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// pair makes a ring and maps it twice, as its writer and reader would.
func pair(t testing.TB, capacity int) (w, r *Ring) {
	t.Helper()
	f, err := Create("test", capacity)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if w, err = Map(int(f.Fd())); err != nil {
		t.Fatal(err)
	}
	if r, err = Map(int(f.Fd())); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Unmap(); r.Unmap() })
	return w, r
}

func never() error { return nil }

// streamSource is the bytes the stream tests pass through a ring.
func streamSource(n int) []byte {
	src := make([]byte, n)
	for i := range src {
		src[i] = byte(i * 7 / 3)
	}
	return src
}

// TestRingStream: chunks of random sizes, many larger than the ring, some
// written as two-part frames, come out in order and intact while writer and
// reader run concurrently.
func TestRingStream(t *testing.T) {
	w, r := pair(t, MinCap)
	const total = 1 << 20
	src := streamSource(total)
	errc := make(chan error, 1)
	go func() {
		rng := rand.New(rand.NewPCG(1, 2))
		for off := 0; off < total; {
			n := min(total-off, 1+rng.IntN(3*MinCap))
			var err error
			if n%2 == 0 { // a frame of two parts, published at once when it fits
				n = min(n, 1+rng.IntN(MinCap/2))
				err = w.WriteFrame(src[off:off+n/2], src[off+n/2:off+n], never)
			} else {
				err = w.Write(src[off:off+n], never)
			}
			if err != nil {
				errc <- err
				return
			}
			off += n
		}
		errc <- nil
	}()
	got := make([]byte, 0, total)
	buf := make([]byte, 5000)
	for len(got) < total {
		n, err := r.Read(buf[:1+len(got)%len(buf)], never)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, buf[:n]...)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, src) {
		t.Fatal("stream differs")
	}
}

// TestRingWaitEnds: a reader waiting on an empty ring and a writer waiting
// on a full one return the check's error once it fails, within a nap.
func TestRingWaitEnds(t *testing.T) {
	w, r := pair(t, MinCap)
	stop := errors.New("stopped")
	deadline := time.Now().Add(300 * time.Millisecond)
	check := func() error {
		if time.Now().After(deadline) {
			return stop
		}
		return nil
	}
	if _, err := r.Read(make([]byte, 1), check); !errors.Is(err, stop) {
		t.Fatalf("read: %v", err)
	}
	if err := w.Write(make([]byte, MinCap+1), check); !errors.Is(err, stop) {
		t.Fatalf("write: %v", err)
	}
	if late := time.Since(deadline); late > 2*Nap+time.Second {
		t.Fatalf("the waits ended %v after their check failed", late)
	}
}

// TestRingClosedRead: once the reader is gone, writes are dropped instead
// of waiting for room.
func TestRingClosedRead(t *testing.T) {
	w, r := pair(t, MinCap)
	r.CloseRead()
	if err := w.Write(make([]byte, 10*MinCap), func() error { return errors.New("waited") }); err != nil {
		t.Fatal(err)
	}
}

// TestMapRefuses: files that are not sealed rings are refused.
func TestMapRefuses(t *testing.T) {
	plain := func(size int64) int {
		fd, err := unix.MemfdCreate("plain", unix.MFD_CLOEXEC)
		if err != nil {
			t.Fatal(err)
		}
		_ = unix.Ftruncate(fd, size)
		t.Cleanup(func() { unix.Close(fd) })
		return fd
	}
	good, err := Create("bad-magic", MinCap)
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	if _, err := unix.Pwrite(int(good.Fd()), []byte{1, 2, 3, 4}, 0); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.CreateTemp(t.TempDir(), "ring")
	if err != nil {
		t.Fatal(err)
	}
	defer tmp.Close()
	for name, fd := range map[string]int{
		"unsealed memfd": plain(HeaderSize + MinCap),
		"bad magic":      int(good.Fd()),
		"regular file":   int(tmp.Fd()),
	} {
		if r, err := Map(fd); !errors.Is(err, ErrBadRing) {
			t.Errorf("%s: got %v, want ErrBadRing", name, err)
			if r != nil {
				r.Unmap()
			}
		}
	}
	for _, c := range []int{0, MinCap - 1, MinCap + 1, 2 * MaxCap} {
		if f, err := Create("bad", c); err == nil {
			f.Close()
			t.Errorf("capacity %d accepted", c)
		}
	}
}

// TestWakeReader: the writer wakes the read side when a Read sleeps, or
// when the standby reader sleeps and nobody polls the ring in its place.
func TestWakeReader(t *testing.T) {
	for _, c := range []struct {
		sleepers, standby, watchers int
		want                        bool
	}{
		{0, 0, 0, false},
		{1, 0, 0, true},
		{0, 1, 0, true},
		{0, 1, 1, false}, // a receive polls: the standby reader is not needed
		{0, 1, 2, false},
		{1, 1, 1, true}, // a Read sleeps mid-frame: it must be woken
		{0, 0, 1, false},
	} {
		if got := wakeReader(c.sleepers, c.standby, c.watchers); got != c.want {
			t.Errorf("wakeReader(%d, %d, %d) = %v, want %v", c.sleepers, c.standby, c.watchers, got, c.want)
		}
	}
}

// TestStandbyAndWatcher: a stream read in turns by a standby reader
// (WaitData, then Read) and by a goroutine that watches and polls the ring,
// one at a time (a mutex is the right to read), comes out whole and in
// order; the writer's flag is off while the watcher watches a sleeping
// standby reader, and on again when it leaves.
func TestStandbyAndWatcher(t *testing.T) {
	w, r := pair(t, MinCap)
	const total = 1 << 20
	src := make([]byte, total)
	for i := range src {
		src[i] = byte(i * 5 / 3)
	}
	wrote := make(chan struct{})
	var over atomic.Bool
	errOver := errors.New("test over")
	go func() {
		defer close(wrote)
		quit := func() error {
			if over.Load() {
				return errOver
			}
			return nil
		}
		for off := 0; off < total; off += 1000 {
			if err := w.Write(src[off:min(total, off+1000)], quit); err != nil {
				if err != errOver {
					panic(err)
				}
				return
			}
		}
	}()
	defer func() { // the writer is done with the ring before the test unmaps it
		over.Store(true)
		<-wrote
	}()
	var mu sync.Mutex // the right to read
	got := make([]byte, 0, total)
	readSome := func() error {
		buf := make([]byte, 3000)
		for r.Pending() && len(got) < total {
			n, err := r.Read(buf[:min(len(buf), total-len(got))], never)
			if err != nil {
				return err
			}
			got = append(got, buf[:n]...)
		}
		return nil
	}
	done := make(chan error, 1)
	var finished atomic.Bool
	errFinished := errors.New("finished")
	check := func() error {
		if finished.Load() {
			return errFinished
		}
		return nil
	}
	go func() { // the standby reader
		for {
			if err := r.WaitData(check); err != nil {
				if err == errFinished {
					err = nil
				}
				done <- err
				return
			}
			mu.Lock()
			err := readSome()
			mu.Unlock()
			if err != nil {
				done <- err
				return
			}
		}
	}()
	for i := 0; ; i++ { // the watcher
		r.Watch()
		r.wmu.Lock()
		off := r.standby == 0 || atomic.LoadUint32(r.u32(offRSleep)) == 0
		r.wmu.Unlock()
		if !off {
			t.Fatal("writer's flag on while a watcher polls and no Read sleeps")
		}
		for j := 0; j < 100; j++ {
			if mu.TryLock() {
				err := readSome()
				mu.Unlock()
				if err != nil {
					t.Fatal(err)
				}
			}
		}
		r.Unwatch()
		mu.Lock()
		all := len(got) == total
		mu.Unlock()
		if all {
			finished.Store(true)
			r.WakeReader()
			break
		}
		runtime.Gosched()
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, src) {
		t.Fatal("stream differs")
	}
}

// TestWriteFrameWakesSleeper: a frame written while the read side sleeps
// (its flag on, nobody polling) wakes it, after the writer's grace; the
// sleeper here waits on the head's futex with no timeout of its own that
// the test could finish by.
func TestWriteFrameWakesSleeper(t *testing.T) {
	w, r := pair(t, MinCap)
	r.count(&r.standby, 1) // a standby reader sleeps: the flag is on
	seen := atomic.LoadUint32(r.u32(offWake))
	woke, ready := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(woke)
		close(ready)
		for atomic.LoadUint32(r.u32(offWake)) == seen { // a futex wait may end spuriously
			futexWait(r.u32(offWake), seen, time.Hour, false)
		}
	}()
	<-ready // (if the frame comes before the sleep, the wait does not begin: the count moved)
	if err := w.WriteFrame([]byte("head"), []byte("data"), never); err != nil {
		t.Fatal(err)
	}
	select {
	case <-woke:
	case <-time.After(time.Minute): // a hang guard, not a speed bound
		t.Fatal("the sleeping reader was not woken")
	}
}
