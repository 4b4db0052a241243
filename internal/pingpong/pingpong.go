// Package pingpong is the one definition of the NetPIPE-style ping-pong
// that examples/pingpong runs between two ranks and that `zorilla bench`
// runs on a raw libp2p stream: the message sizes, how many round trips
// each size gets, how many trials, and the table rank 0 prints (which the
// bench parses). Both sides follow it, so their figures compare like for
// like, and with NetPIPE's: each size is measured Trials times and the
// fastest trial is reported, as NetPIPE 3.7 does (it runs 3 trials of
// about 0.2 s each as Debian builds it, and prints the lowest time).
//
// It imports only the standard library: user programs link it.
package pingpong

import "time"

const (
	// MaxSize bounds one message: a single buffer of 1 GiB is plenty.
	MaxSize = 1 << 30
	// FirstReps is the count of round trips of the first size (1 byte),
	// before any timing is known.
	FirstReps = 16
	// Trials is how many times each size is measured; the fastest counts.
	Trials = 3
	// PerTrial is how long one trial of a size lasts: long enough that the
	// clock's resolution does not matter, short enough that a sweep to
	// 8 MiB takes seconds (NetPIPE's trials last about twice as long).
	PerTrial = 100 * time.Millisecond
	// minReps keeps a few round trips of the largest sizes, which take
	// longer than PerTrial each.
	minReps = 4
	// maxReps bounds the round trips of one size.
	maxReps = 1 << 20
)

// Sizes are the message sizes of a sweep up to max: the powers of two
// below it, then max.
func Sizes(max int) []int {
	var out []int
	for s := 1; s < max; s *= 2 {
		out = append(out, s)
	}
	return append(out, max)
}

// NextReps picks the count of round trips of the next (up to twice larger)
// size, from the last size's reps and time, so that it lasts about
// PerTrial: at least minReps, at most maxReps.
func NextReps(reps int64, took time.Duration) int64 {
	if took <= 0 {
		return min(reps*2, maxReps)
	}
	per := took / time.Duration(reps)
	if per <= 0 { // under a nanosecond a round trip: as many as allowed
		return maxReps
	}
	n := int64(PerTrial / (2 * per)) // the next size takes up to twice as long
	return max(minReps, min(n, maxReps))
}

// Best runs trial Trials times and returns the shortest time it took.
// Both ends of a ping-pong call it, so they run the same trials.
func Best(trial func() (time.Duration, error)) (time.Duration, error) {
	var best time.Duration
	for i := range Trials {
		took, err := trial()
		if err != nil {
			return 0, err
		}
		if i == 0 || took < best {
			best = took
		}
	}
	return best, nil
}

// Result is the measure of one size: reps round trips took Took.
type Result struct {
	Size int
	Reps int64
	Took time.Duration
}

// OneWay is the one-way latency: half a round trip.
func (r Result) OneWay() time.Duration {
	if r.Reps <= 0 {
		return 0
	}
	return r.Took / time.Duration(2*r.Reps)
}

// LatencyMicros is the one-way latency in microseconds.
func (r Result) LatencyMicros() float64 { return float64(r.OneWay().Nanoseconds()) / 1e3 }

// MBps is the bandwidth in MB/s (10^6 bytes per second) of one message's
// one-way trip.
func (r Result) MBps() float64 {
	s := r.OneWay().Seconds()
	if s <= 0 {
		return 0
	}
	return float64(r.Size) / s / 1e6
}
