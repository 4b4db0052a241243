package mpi

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestSmallMessageNoAlloc: a blocking Send and Recv of a small message
// between two ranks sharing rings allocate nothing, either way.
func TestSmallMessageNoAlloc(t *testing.T) {
	if raceOn {
		t.Skip("the race detector allocates")
	}
	s0, s1 := ringPair(t)
	msg := make([]byte, 8)
	allocs := testing.AllocsPerRun(200, func() {
		for _, p := range [2][2]*Session{{s0, s1}, {s1, s0}} {
			if err := Send(p[0].world, msg, p[1].rank, 3); err != nil {
				t.Fatal(err)
			}
			if st, err := Recv(p[1].world, msg, p[0].rank, 3); err != nil || st.Bytes != 8 || st.Source != p[0].rank {
				t.Fatal(st, err)
			}
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per round trip, want 0", allocs)
	}
}

// TestRecvOwnConcurrent: blocking receives on many goroutines, each on its
// own tag, reuse their requests while others complete them (a poller that
// reads another's message, the standby reader, or the receive itself,
// polling or asleep): every message comes once, in order per tag.
func TestRecvOwnConcurrent(t *testing.T) {
	s0, s1 := ringPair(t)
	standby(t, s0, s1)
	const tags, each = 6, 300
	var wg sync.WaitGroup
	errs := make(chan error, 2*tags)
	for tag := range tags {
		wg.Add(2)
		go func() {
			defer wg.Done()
			var b [8]byte
			for i := range each {
				binary.LittleEndian.PutUint64(b[:], uint64(tag*each+i))
				if err := Send(s0.world, b[:], 1, tag); err != nil {
					errs <- err
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			var b [8]byte
			for i := range each {
				src := 0
				if i%3 == 0 { // the wildcard source too
					src = AnySource
				}
				st, err := Recv(s1.world, b[:], src, tag)
				switch {
				case err != nil:
					errs <- err
					return
				case st.Source != 0 || st.Tag != tag || binary.LittleEndian.Uint64(b[:]) != uint64(tag*each+i):
					errs <- fmt.Errorf("tag %d, receive %d: %+v, %d", tag, i, st, binary.LittleEndian.Uint64(b[:]))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestRecvOwnSessionEnds: a blocking receive asleep on its request returns
// the session's error when the session ends, and later receives fail too.
func TestRecvOwnSessionEnds(t *testing.T) {
	s0, s1 := ringPair(t)
	standby(t, s0, s1)
	lost := errors.New("gone")
	got := make(chan error, 1)
	go func() {
		var b [8]byte
		_, err := Recv(s1.world, b[:], 0, 1)
		got <- err
	}()
	deadline := time.Now().Add(time.Minute)
	for { // until the receive is posted
		s1.mu.Lock()
		posted := len(s1.m.posted)
		s1.mu.Unlock()
		if posted == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("receive never posted")
		}
		time.Sleep(time.Millisecond)
	}
	end(s1, lost)
	if err := <-got; !errors.Is(err, lost) {
		t.Fatalf("blocked receive: %v, want %v", err, lost)
	}
	var b [8]byte
	if _, err := Recv(s1.world, b[:], 0, 1); !errors.Is(err, lost) {
		t.Fatalf("receive after the end: %v, want %v", err, lost)
	}
}
