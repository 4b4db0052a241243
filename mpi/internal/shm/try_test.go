package shm

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"
)

// TestTryStream: a writer that writes what fits (TryWrite, two-part
// chunks) and a reader that reads what is there (TryRead), each sleeping
// with Sleep when it cannot move, pass 1 MiB through a ring of MinCap
// intact and in order.
func TestTryStream(t *testing.T) {
	for _, noV := range []bool{false, true} {
		noWaitv.Store(noV) // the fallback without futex_waitv too
		w, r := pair(t, MinCap)
		const total = 1 << 20
		src := streamSource(total)
		errc := make(chan error, 1)
		go func() {
			rng := rand.New(rand.NewPCG(1, 2))
			for off := 0; off < total; {
				n := min(total-off, 1+rng.IntN(3*MinCap))
				half := off + n/2
				k, err := w.TryWrite(src[off:half], src[half:off+n])
				if err != nil {
					errc <- err
					return
				}
				off += k
				if k == 0 {
					if err := Sleep(nil, []*Ring{w}, time.Second); err != nil {
						errc <- err
						return
					}
				}
			}
			errc <- nil
		}()
		got := make([]byte, 0, total)
		buf := make([]byte, 3000)
		deadline := time.Now().Add(20 * time.Second)
		for len(got) < total && time.Now().Before(deadline) {
			n, err := r.TryRead(buf)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, buf[:n]...)
			if n == 0 {
				if err := Sleep([]*Ring{r}, nil, time.Second); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, src) {
			t.Fatalf("futex_waitv off %v: %d bytes read, not what was written", noV, len(got))
		}
	}
	noWaitv.Store(false)
}

// TestSleepEnds: Sleep returns at once when a ring it watches can move,
// when a peer moves during it, and otherwise sleeps: it may return early
// (its contract), but a caller looking again is not made to spin.
func TestSleepEnds(t *testing.T) {
	w, r := pair(t, MinCap)
	start, sleeps := time.Now(), 0
	for time.Since(start) < 50*time.Millisecond {
		if err := Sleep([]*Ring{r}, nil, 50*time.Millisecond-time.Since(start)); err != nil {
			t.Fatal(err)
		}
		sleeps++
	}
	if sleeps > 5 {
		t.Fatalf("an empty ring: %d Sleeps in 50ms, want it to sleep, not spin", sleeps)
	}
	if _, err := w.TryWrite([]byte("x"), nil); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if err := Sleep([]*Ring{r}, []*Ring{w}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("Sleep with data there took %v", took)
	}
	// A full ring: the writer sleeps until the reader makes room.
	var b [1]byte
	if n, _ := r.TryRead(b[:]); n != 1 {
		t.Fatal("no byte")
	}
	for {
		n, err := w.TryWrite(make([]byte, MinCap), nil)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
	}
	done := make(chan error, 1)
	go func() { done <- Sleep(nil, []*Ring{w}, time.Minute) }()
	buf := make([]byte, MinCap)
	for {
		n, err := r.TryRead(buf)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a writer asleep on a full ring was not woken when it emptied")
	}
}

// TestTryReadCorrupt: a record with an impossible control word is refused.
func TestTryReadCorrupt(t *testing.T) {
	w, r := pair(t, MinCap)
	if _, err := w.TryWrite([]byte("hello"), nil); err != nil {
		t.Fatal(err)
	}
	*r.ctrl(0) = ctrlWord(64, 5) // the tag of another position
	if _, err := r.TryRead(make([]byte, 8)); err == nil {
		t.Fatal("a record tagged with another position was read")
	}
}
