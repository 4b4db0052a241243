package node

import (
	"errors"
	"testing"
	"time"
)

// An offerer is ranked by the smaller of a fresh sample and what the
// overlay already knew: load only inflates a round trip. A failed sample
// falls back on what the overlay knew, if anything.
func TestOfferRTT(t *testing.T) {
	ms := time.Millisecond
	timeout := errors.New("ping: context deadline exceeded")
	for _, c := range []struct {
		name          string
		sample, known time.Duration
		err           error
		tracked       bool
		want          time.Duration
		wantErr       bool
	}{
		{"untracked peer: the sample", 30 * ms, 0, nil, false, 30 * ms, false},
		{"sample inflated by a burst: the overlay's", 30 * ms, 1 * ms, nil, true, 1 * ms, false},
		{"sample below the smoothed RTT: the sample", 9 * ms, 11 * ms, nil, true, 9 * ms, false},
		{"tracked but not measured yet: the sample", 5 * ms, 0, nil, true, 5 * ms, false},
		{"ping timed out, tracked: the overlay's", 0, 12 * ms, timeout, true, 12 * ms, false},
		{"ping timed out, untracked: the error", 0, 0, timeout, false, 0, true},
	} {
		got, err := offerRTT(c.sample, c.err, c.known, c.tracked)
		if got != c.want || (err != nil) != c.wantErr {
			t.Errorf("%s: offerRTT(%v, %v, %v, %v) = %v, %v; want %v, error %v",
				c.name, c.sample, c.err, c.known, c.tracked, got, err, c.want, c.wantErr)
		}
	}
}

func TestPingWait(t *testing.T) {
	for _, c := range []struct {
		known   time.Duration
		tracked bool
		want    time.Duration
	}{
		{10 * time.Millisecond, true, trackedPingWait},
		{0, true, 0},                      // tracked, not measured yet: the caller's bound
		{10 * time.Millisecond, false, 0}, // not tracked
	} {
		if got := pingWait(c.known, c.tracked); got != c.want {
			t.Errorf("pingWait(%v, %v) = %v, want %v", c.known, c.tracked, got, c.want)
		}
	}
}
