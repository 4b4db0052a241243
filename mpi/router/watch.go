package router

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/internal/silence"
)

// Liveness. A remote agent of a job is alive while frames of it arrive on
// any of the job's streams with it: its answers on this agent's link (pongs,
// credit) and what it sends on its own (pings, messages). Each reader stamps
// the agent at every frame; one goroutine per job (watchLoop) counts each
// agent's silence from those stamps and counts it lost past its timeout. No
// stream's read deadline decides it: a deadline is a timer, and when this
// agent itself did not run for seconds (its process or the whole machine
// stalled: BENCHMARKS.md, "Links silent while their agents live") every
// deadline fires at once on resumption, before the readers have taken what
// the remote sent meanwhile, and live agents were counted lost. The watch
// loop counts a check that comes late as at most one heartbeat interval
// (internal/silence), so a stall of this agent is not blamed on the others,
// while an agent that really went silent is counted lost within its
// timeout and one check.

// errSilent is why an agent is lost that was not heard from for its timeout.
var errSilent = errors.New("nothing heard from it")

// heardStamp is when frames of one remote agent last arrived, as time since
// the job began plus one (zero: no stream with it yet, so it is not
// watched). Written by the readers, read by the watch loop.
type heardStamp struct{ at atomic.Int64 }

// heardFrom stamps remote agent p alive now.
func (j *Job) heardFrom(p peer.ID) {
	if st := j.heard[p]; st != nil {
		st.at.Store(int64(time.Since(j.born)) + 1)
	}
}

// lastHeard is when remote agent p was last heard from; ok is false while
// no stream with it has begun.
func (j *Job) lastHeard(p peer.ID) (at time.Time, ok bool) {
	st := j.heard[p]
	if st == nil {
		return time.Time{}, false
	}
	n := st.at.Load()
	if n == 0 {
		return time.Time{}, false
	}
	return j.born.Add(time.Duration(n - 1)), true
}

// watchLoop checks every half heartbeat interval how long each remote agent
// with a stream has been silent, and counts it lost past its timeout.
func (j *Job) watchLoop() {
	defer j.wg.Done()
	t := time.NewTicker(j.cfg.HeartbeatInterval / 2)
	defer t.Stop()
	counts := map[peer.ID]*silence.Count{}
	for {
		select {
		case <-t.C:
		case <-j.ctx.Done():
			return
		}
		now := time.Now()
		for _, p := range j.remote {
			heard, ok := j.lastHeard(p)
			if !ok || j.settled(p) {
				continue
			}
			s := counts[p]
			if s == nil {
				s = silence.Since(heard)
				counts[p] = s
			}
			limit := j.silenceLimit(p)
			if d := s.Check(now, heard, j.cfg.HeartbeatInterval); d >= limit {
				j.peerLost(p, fmt.Errorf("%w for %v (limit %v)", errSilent, d.Round(time.Millisecond), limit))
			}
		}
	}
}

// settled reports whether remote agent p was counted lost or ended the job:
// its silence no longer matters.
func (j *Job) settled(p peer.ID) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.lost[p] || j.ended[p] || j.err != nil || j.removed
}
