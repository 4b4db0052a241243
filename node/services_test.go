package node

import (
	"testing"
	"time"
)

// An offerer is ranked by the smaller of a fresh sample and what the
// overlay already knew: load only inflates a round trip.
func TestOfferRTT(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		name          string
		sample, known time.Duration
		tracked       bool
		want          time.Duration
	}{
		{"untracked peer: the sample", 30 * ms, 0, false, 30 * ms},
		{"sample inflated by a burst: the overlay's", 30 * ms, 1 * ms, true, 1 * ms},
		{"sample below the smoothed RTT: the sample", 9 * ms, 11 * ms, true, 9 * ms},
		{"tracked but not measured yet: the sample", 5 * ms, 0, true, 5 * ms},
	} {
		if got := offerRTT(c.sample, c.known, c.tracked); got != c.want {
			t.Errorf("%s: offerRTT(%v, %v, %v) = %v, want %v", c.name, c.sample, c.known, c.tracked, got, c.want)
		}
	}
}
