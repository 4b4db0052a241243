package job

import "time"

// Liveness. A host is counted lost when no byte of its report streams has
// arrived for LostAfter, or when its stream ended and no new one came for
// half of that; both as seen where the bytes arrive (the stream's reader
// stamps reportState), not where the session takes its reports. The
// session may be busy: under swap I/O one checkpoint chunk's write kept a
// session's loop for 9 s while every host's heartbeats waited behind it,
// and the loop, back, counted a live host lost (BENCHMARKS.md).
//
// The watcher counts each host's silence at its checks (LostAfter/4
// apart), and one check adds at most a check and a half to it: a check
// that comes late, because the watcher or the whole agent was stalled,
// does not blame the hosts for the stall. A host that really falls silent
// is counted lost within LostAfter plus one check (LostAfter/4), plus
// whatever time the watcher itself spent stalled beyond that bound.

// heard is what the stream readers know of one lease's host.
type heard struct {
	at    time.Time // bytes last arrived, or a stream of it opened
	ended time.Time // its latest stream ended then; zero while one is open
}

// silences is the watcher's count of each lease's silence.
type silences struct {
	last  time.Time                // the previous check
	quiet map[string]time.Duration // counted since bytes last arrived
	cut   map[string]time.Duration // counted since its stream ended
}

func newSilences(now time.Time) *silences {
	return &silences{last: now, quiet: map[string]time.Duration{}, cut: map[string]time.Duration{}}
}

// check counts the silences up to now and returns the leases whose hosts
// are lost: silent for longer than after, or cut off (their stream ended,
// none opened since) for longer than after/2. step is the most one check
// adds (at most the time since the previous check).
func (s *silences) check(now time.Time, hs map[string]heard, after, step time.Duration) []string {
	var lost []string
	for lease, h := range hs {
		s.quiet[lease] = counted(s.quiet[lease], h.at, s.last, now, step)
		if h.ended.IsZero() {
			delete(s.cut, lease)
		} else {
			s.cut[lease] = counted(s.cut[lease], h.ended, s.last, now, step)
		}
		if s.quiet[lease] > after || s.cut[lease] > after/2 {
			lost = append(lost, lease)
		}
	}
	s.last = now
	return lost
}

// counted is a silence that was prev at the check at last, counted again
// at now: an event at t since then (bytes heard, a stream ended) restarts
// it from t; else it grows by the time since last. Either way a check adds
// at most step.
func counted(prev time.Duration, t, last, now time.Time, step time.Duration) time.Duration {
	if t.After(last) {
		return min(max(now.Sub(t), 0), step)
	}
	return prev + min(max(now.Sub(last), 0), step)
}
