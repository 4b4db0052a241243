package chunk

import (
	"context"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/internal/clock"
)

// round is how many peers a host asks for one chunk before it pauses.
const round = 4

// plan is one host's view of who holds which chunk of a file: the job's
// hosts but the owner, in the commit's order (the same on every host);
// chunk c's seed is peers[c mod len(peers)], the host that takes it from
// the owner. Peers that failed (unreachable, reset, a bad chunk) are not
// asked again, and the next peer in order takes over their seeding.
type plan struct {
	peers  []peer.ID
	self   int // index of this host in peers, -1 if absent
	chunks int

	mu       sync.Mutex // guards bad, refused and progress
	bad      map[peer.ID]bool
	refused  map[peer.ID]int
	progress time.Time // when this host last got a chunk from a peer
}

// gotChunk records progress: the job's hosts are serving.
func (pl *plan) gotChunk(now time.Time) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	pl.progress = now
}

// stalled says whether this host has waited past patience for chunk c's
// peers, counting from when it began waiting or last got a chunk from a
// peer, whichever is later: on a slow or loaded network the seeds are
// still working as long as chunks keep coming.
func (pl *plan) stalled(begin, now time.Time, patience time.Duration) bool {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	return now.Sub(later(begin, pl.progress)) > patience
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// strikes is how many refusals make a peer failed: a host refuses until
// the job's commit reached it, a matter of a round trip or two.
const strikes = 8

// strike counts a refusal from p and says whether p is now failed.
func (pl *plan) strike(p peer.ID) bool {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	pl.refused[p]++
	if pl.refused[p] >= strikes {
		pl.bad[p] = true
	}
	return pl.bad[p]
}

func newPlan(f Fetch, chunks int, self peer.ID) *plan {
	pl := &plan{self: -1, chunks: chunks, bad: map[peer.ID]bool{}, refused: map[peer.ID]int{}}
	seen := map[peer.ID]bool{}
	for _, h := range f.Hosts {
		if h == f.Owner || seen[h] {
			continue
		}
		seen[h] = true
		if h == self {
			pl.self = len(pl.peers)
		}
		pl.peers = append(pl.peers, h)
	}
	return pl
}

// order is the order this host fetches chunks in: those it seeds, then the
// others from an offset of its own, so hosts spread over the chunks.
func (pl *plan) order() []int {
	var mine, rest []int
	start := 0
	if pl.self >= 0 && len(pl.peers) > 0 {
		start = pl.self * pl.chunks / len(pl.peers)
	}
	for k := range pl.chunks {
		c := (start + k) % pl.chunks
		if pl.self >= 0 && c%len(pl.peers) == pl.self {
			mine = append(mine, c)
		} else {
			rest = append(rest, c)
		}
	}
	return append(mine, rest...)
}

// seeder returns chunk c's seed: the first peer, from c's seed on, not
// known to have failed. It is this host when the ones before it failed.
func (pl *plan) seeder(c int) (peer.ID, bool) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	n := len(pl.peers)
	for k := range n {
		p := pl.peers[(c+k)%n]
		if !pl.bad[p] {
			return p, true
		}
	}
	return "", false
}

// candidates returns up to round peers to ask for chunk c in round r: the
// seed first, then the others in rotation from this host on.
func (pl *plan) candidates(c, r int, self peer.ID) []peer.ID {
	seed, ok := pl.seeder(c)
	pl.mu.Lock()
	defer pl.mu.Unlock()
	var out []peer.ID
	if ok && seed != self {
		out = append(out, seed)
	}
	n := len(pl.peers)
	for k := range n {
		p := pl.peers[(max(pl.self, 0)+1+r*round+k)%n]
		if len(out) == round {
			break
		}
		if p != self && p != seed && !pl.bad[p] {
			out = append(out, p)
		}
	}
	return out
}

func (pl *plan) fail(p peer.ID) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	pl.bad[p] = true
}

// get fetches chunk c into p: from the owner if this host seeds it, else
// from peers, and from the owner once they failed or Patience ran out.
func (s *Service) get(ctx context.Context, f Fetch, p *partial, pl *plan, c int) error {
	self := s.ep.Self()
	begin := timeNow()
	wait := pauseMin
	for r := 0; ; r++ {
		if seed, ok := pl.seeder(c); !ok || seed == self {
			break
		}
		for _, q := range pl.candidates(c, r, self) {
			switch s.tryPeer(ctx, f, p, pl, q, c) {
			case gotIt:
				pl.gotChunk(timeNow())
				return nil
			case failed:
				pl.fail(q)
			}
		}
		if seed, ok := pl.seeder(c); !ok || seed == self || pl.stalled(begin, timeNow(), s.cfg.Patience) {
			s.fallbacks.Add(1)
			break
		}
		if err := clock.Sleep(ctx, wait); err != nil {
			return err
		}
		wait = min(2*wait, pauseMax)
	}
	return s.fromOwner(ctx, f, p, c)
}
