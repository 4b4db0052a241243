package flood

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// Close ends every goroutine of a Flooder, including a handler blocked on a
// peer that opened a stream and never wrote, without waiting for the
// stream timeout.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	c := newClusterWithBare(t, line(3), 1, func(_ int, cfg *Config) {
		cfg.StreamTimeout = time.Minute // Close must not wait for it
	})
	if err := c.fl[0].Flood(context.Background(), Advert{Job: "j"}, 2); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the flood", func() bool { return lastTTL(c.rec[2].deliveries(), "j") == 1 })

	silent, err := c.hosts[3].NewStream(context.Background(), c.hosts[1].ID(), ProtocolID)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Reset()
	if _, err := silent.Write([]byte{5}); err != nil { // a frame of 5 bytes that never come
		t.Fatal(err)
	}
	waitFor(t, "the silent stream's handler", func() bool {
		for _, g := range floodGoroutines() {
			if strings.Contains(g, "handleStream") {
				return true
			}
		}
		return false
	})

	start := time.Now()
	for _, f := range c.fl {
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Close took %v", d)
	}
	waitFor(t, "no Flooder goroutine left", func() bool { return len(floodGoroutines()) == 0 })

	f := c.fl[0]
	if err := f.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := f.Flood(context.Background(), Advert{Job: "late"}, 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Flood after Close: %v", err)
	}
	if err := f.Advertise(context.Background(), Advert{Job: "late"}, nil, ZorillaSchedule()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Advertise after Close: %v", err)
	}
}

// Advertise blocked in a wait returns ErrClosed when the Flooder closes.
func TestCloseEndsAdvertise(t *testing.T) {
	fc := newFakeClock(time.Now())
	c := newCluster(t, [][]int{{}}, func(_ int, cfg *Config) { cfg.Clock = fc })
	res := make(chan error, 1)
	go func() { res <- c.fl[0].Advertise(context.Background(), Advert{Job: "j"}, nil, ZorillaSchedule()) }()
	fc.nextWait(t) // never fired
	if err := c.fl[0].Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-res:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("Advertise: %v, want ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Advertise still running after Close")
	}
}

// A caller's deadline ends Advertise with the context's error.
func TestAdvertiseDeadline(t *testing.T) {
	fc := newFakeClock(time.Now())
	c := newCluster(t, [][]int{{}}, func(_ int, cfg *Config) { cfg.Clock = fc })
	ctx, cancel := context.WithCancel(context.Background())
	res := make(chan error, 1)
	go func() { res <- c.fl[0].Advertise(ctx, Advert{Job: "j"}, nil, ZorillaSchedule()) }()
	fc.nextWait(t)
	cancel()
	select {
	case err := <-res:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Advertise: %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Advertise still running after its context ended")
	}
}
