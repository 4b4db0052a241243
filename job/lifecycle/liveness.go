package lifecycle

import (
	"time"

	"github.com/zorilla-p2p/zorilla/internal/silence"
)

// Liveness. A host is counted lost when no byte of its report streams has
// arrived for LostAfter, as seen where the bytes arrive (the stream's
// reader stamps the host, and Ticks carry the stamps in Input.Heard), not
// where the machine takes its reports; or at once when its current stream
// ends (in order with the reports before the end: the other hosts' rank
// failures that follow from its loss must not be taken first, as the
// program's own). The executor may be busy: under swap I/O one checkpoint
// chunk's write kept a submitter's loop for 9 s while every host's
// heartbeats waited behind it.
//
// The machine counts each host's silence at its checks (LostAfter/4
// apart, internal/silence), and one check adds at most two checks' worth
// (LostAfter/2) to it: a check that comes late, because the agent was
// stalled, does not blame the hosts for the stall, while the jitter of a
// loaded machine still counts whole. A host that really falls silent is
// counted lost within LostAfter plus one check (LostAfter/4), plus
// whatever time the agent itself spent stalled beyond that bound.

// silences is the machine's count of each lease's silence.
type silences struct {
	quiet map[string]*silence.Count
}

func newSilences() *silences {
	return &silences{quiet: map[string]*silence.Count{}}
}

// check counts the silences up to now of leases, in their order, from
// when each lease's bytes last arrived (heard; a lease not in it is not
// judged), and returns the leases whose hosts are silent for longer than
// after. step is the most one check adds.
func (s *silences) check(now time.Time, leases []string, heard map[string]time.Time, after, step time.Duration) []string {
	var lost []string
	for _, lease := range leases {
		at, ok := heard[lease]
		if !ok {
			continue
		}
		c := s.quiet[lease]
		if c == nil {
			c = new(silence.Count) // counts from the stamp, a step at most
			s.quiet[lease] = c
		}
		if c.Check(now, at, step) > after {
			lost = append(lost, lease)
		}
	}
	return lost
}
