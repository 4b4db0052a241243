package linkdelay

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// sink is a dst that records when each write arrives. While hold is set,
// writes block until release or Close.
type sink struct {
	mu     sync.Mutex
	got    []arrival
	fail   error // returned by writes when set
	hold   chan struct{}
	closed bool
}

type arrival struct {
	at time.Time
	b  string
}

func (s *sink) Write(b []byte) (int, error) {
	s.mu.Lock()
	hold, fail := s.hold, s.fail
	s.mu.Unlock()
	if hold != nil {
		<-hold
	}
	if fail != nil {
		return 0, fail
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, net.ErrClosed
	}
	s.got = append(s.got, arrival{time.Now(), string(b)})
	return len(b), nil
}

func (s *sink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hold != nil {
		close(s.hold)
		s.hold = nil
	}
	s.closed = true
	return nil
}

func (s *sink) arrivals() []arrival {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]arrival(nil), s.got...)
}

// Under synctest the clock is the test's: each chunk leaves exactly when
// it is due, so the lower bound is strict and the upper bound only allows
// for the scheduler.
func TestLineDelaysInOrderWithoutCuttingBandwidth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const d = 10 * time.Millisecond
		s := &sink{}
		l := NewLine(s, d, Limit)
		var sentAt []time.Time
		for i := range 100 {
			if i == 50 {
				time.Sleep(3 * time.Millisecond) // a second burst, later
			}
			if _, err := fmt.Fprintf(l, "chunk %d", i); err != nil {
				t.Fatal(err)
			}
			sentAt = append(sentAt, time.Now())
		}
		start := sentAt[0]
		synctest.Wait()
		if got := s.arrivals(); len(got) != 0 {
			t.Fatalf("%d chunks left before their delay", len(got))
		}
		time.Sleep(d + 5*time.Millisecond)
		got := s.arrivals()
		if len(got) != 100 {
			t.Fatalf("%d chunks arrived, want 100", len(got))
		}
		for i, a := range got {
			if a.b != fmt.Sprintf("chunk %d", i) {
				t.Fatalf("arrival %d is %q: order lost", i, a.b)
			}
			if lag := a.at.Sub(sentAt[i]); lag < d || lag > d+time.Millisecond {
				t.Errorf("chunk %d left %v after its write, want %v", i, lag, d)
			}
		}
		// A hundred chunks take one delay, not a hundred.
		if last := got[99].at.Sub(start); last > d+4*time.Millisecond {
			t.Errorf("the last chunk left %v after the first write", last)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestLineFullBlocksWriterUntilRoomOrDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &sink{hold: make(chan struct{})}
		l := NewLine(s, time.Millisecond, 10)
		if _, err := l.Write(make([]byte, 12)); err != nil { // larger than the line, but it is empty
			t.Fatal(err)
		}
		res := make(chan error, 1)
		go func() {
			_, err := l.Write([]byte("abc"))
			res <- err
		}()
		synctest.Wait()
		select {
		case err := <-res:
			t.Fatalf("a write into a full line returned %v", err)
		default:
		}
		l.SetWriteDeadline(time.Now().Add(time.Second))
		start := time.Now()
		if err := <-res; !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("write at its deadline: %v", err)
		}
		if waited := time.Since(start); waited != time.Second {
			t.Errorf("the blocked write gave up after %v, want its 1s deadline", waited)
		}
		l.SetWriteDeadline(time.Time{})
		go func() {
			_, err := l.Write([]byte("abc"))
			res <- err
		}()
		synctest.Wait()
		s.mu.Lock()
		close(s.hold) // the 12 bytes leave: room
		s.hold = nil
		s.mu.Unlock()
		if err := <-res; err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if got := s.arrivals(); len(got) != 2 || got[1].b != "abc" {
			t.Fatalf("arrivals %v", got)
		}
	})
}

func TestLineCloseSendsWhatWasWrittenFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const d = 20 * time.Millisecond
		s := &sink{}
		l := NewLine(s, d, Limit)
		for _, m := range []string{"a", "b", "c"} {
			if _, err := l.Write([]byte(m)); err != nil {
				t.Fatal(err)
			}
		}
		start := time.Now()
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took < d || took > d+time.Millisecond {
			t.Errorf("Close took %v, want the delay %v", took, d)
		}
		got := s.arrivals()
		if len(got) != 3 || got[0].b != "a" || got[2].b != "c" || !s.closed {
			t.Fatalf("after Close: arrivals %v, dst closed %v", got, s.closed)
		}
		if _, err := l.Write([]byte("late")); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("write after Close: %v", err)
		}
		if err := l.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
	})
}

// A peer that stops reading blocks the line's write; Close gives it the
// delay and a grace, then closes the connection under it.
func TestLineCloseDoesNotHangOnAStuckConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const d = 5 * time.Millisecond
		s := &sink{hold: make(chan struct{})}
		l := NewLine(s, d, Limit)
		if _, err := l.Write([]byte("stuck")); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took != d+closeGrace {
			t.Errorf("Close took %v, want %v", took, d+closeGrace)
		}
		if !s.closed || len(s.arrivals()) != 0 {
			t.Fatalf("dst closed %v, arrivals %v", s.closed, s.arrivals())
		}
	})
}

func TestLineReportsWriteErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		boom := errors.New("connection reset")
		s := &sink{fail: boom}
		l := NewLine(s, time.Millisecond, Limit)
		if _, err := l.Write([]byte("x")); err != nil {
			t.Fatalf("first write: %v (the error comes later)", err)
		}
		time.Sleep(2 * time.Millisecond)
		if _, err := l.Write([]byte("y")); !errors.Is(err, boom) {
			t.Fatalf("write after a failed send: %v, want %v", err, boom)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

// Writers from many goroutines, and Close while they write: every write
// either enters the line and arrives, or fails with ErrClosed; nothing
// is left running (synctest fails the test otherwise).
func TestLineConcurrentWritersAndClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &sink{}
		l := NewLine(s, 3*time.Millisecond, 64)
		var wg sync.WaitGroup
		var mu sync.Mutex
		accepted := 0
		for w := range 8 {
			wg.Go(func() {
				for i := range 50 {
					if _, err := fmt.Fprintf(l, "%d/%d;", w, i); err != nil {
						if !errors.Is(err, net.ErrClosed) {
							t.Errorf("write: %v", err)
						}
						return
					}
					mu.Lock()
					accepted++
					mu.Unlock()
					time.Sleep(time.Millisecond)
				}
			})
		}
		time.Sleep(20 * time.Millisecond)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		if got := len(s.arrivals()); got != accepted || got == 0 {
			t.Fatalf("%d chunks arrived, %d were accepted", got, accepted)
		}
	})
}
