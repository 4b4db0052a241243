package sim

import (
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/flood"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// floodInfo is one flood key of a job: the advert's need, and what each
// agent remembers of it (flood.Rule's state).
type floodInfo struct {
	key     string
	need    proto.Need
	maxSeen []uint8
	maxFwd  []uint8
}

// hop is an advert on its way to agent to from agent from, with ttl.
type hop struct {
	at       time.Duration
	seq      uint64
	ttl      int
	to, from int32
}

// forwardCost is how long an agent takes to pass an advert on.
const forwardCost = 200 * time.Microsecond

func (w *World) floodOf(j *simJob, key string, body []byte) *floodInfo {
	if f, ok := j.floods[key]; ok {
		return f
	}
	need, err := proto.DecodeNeed(body)
	if err != nil {
		w.violate(j.sub, "job %s: its advert does not decode: %v", j.id, err)
	}
	n := len(w.agents)
	f := &floodInfo{key: key, need: need, maxSeen: make([]uint8, n), maxFwd: make([]uint8, n)}
	j.floods[key] = f
	return f
}

// flood spreads a radius of j's advert from its submitter over the
// overlay, each agent applying the flood's rule (flood.Rule): the
// submitter's own flood of radius r enters as TTL r+1 on itself. The
// walk follows arrival times; every agent the advert is delivered to gets
// it as an event at its arrival. Links are judged when the radius goes
// out: a cut or a crash during the walk's few hundred milliseconds is not
// seen by it.
func (w *World) flood(j *simJob, key string, body []byte, radius int) {
	f := w.floodOf(j, key, body)
	h := w.fheap[:0]
	var seq uint64
	sent, reached := j.adverts, 0
	defer func() {
		w.tracef(event{kind: evFlood, agent: j.sub, job: j.idx}, "%s radius %d: %d messages, %d delivered", key, radius,
			j.adverts-sent, reached)
	}()
	h = pushHop(h, hop{at: w.now, ttl: radius + 1, to: j.sub, from: j.sub})
	for len(h) > 0 {
		var x hop
		h, x = popHop(h)
		a := w.agents[x.to]
		if !a.up {
			continue
		}
		deliver, fwd, seen, fwded := flood.Rule(int(f.maxSeen[x.to]), int(f.maxFwd[x.to]), x.ttl)
		f.maxSeen[x.to], f.maxFwd[x.to] = uint8(seen), uint8(fwded)
		if deliver {
			reached++
			w.push(x.at-w.now, evAdvert, x.to, j.idx, f)
		}
		if fwd == 0 {
			continue
		}
		cost := time.Duration(float64(forwardCost) * a.slow)
		for _, nb := range a.nbrs {
			if nb == x.from && x.to != j.sub {
				continue
			}
			j.adverts++
			w.stats.adverts++
			if !w.reachable(int(x.to), int(nb)) || w.lost() {
				continue
			}
			seq++
			h = pushHop(h, hop{at: x.at + cost + w.delay(int(x.to), int(nb)), seq: seq, ttl: fwd, to: nb, from: x.to})
		}
	}
	w.fheap = h
}

// direct sends j's advert straight to peers with TTL 1: delivered, never
// forwarded.
func (w *World) direct(j *simJob, key string, body []byte, peers []peer.ID) {
	f := w.floodOf(j, key, body)
	w.tracef(event{kind: evFlood, agent: j.sub, job: j.idx}, "%s direct to %d peers", key, len(peers))
	for _, p := range peers {
		to := w.byID[p]
		j.adverts++
		w.stats.adverts++
		if !w.reachable(int(j.sub), int(to)) || w.lost() {
			continue
		}
		deliver, _, seen, fwded := flood.Rule(int(f.maxSeen[to]), int(f.maxFwd[to]), 1)
		f.maxSeen[to], f.maxFwd[to] = uint8(seen), uint8(fwded)
		if deliver {
			w.push(w.delay(int(j.sub), int(to)), evAdvert, to, j.idx, f)
		}
	}
}

func hopLess(a, b *hop) bool { return a.at < b.at || a.at == b.at && a.seq < b.seq }

func pushHop(h []hop, x hop) []hop {
	h = append(h, x)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !hopLess(&h[i], &h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	return h
}

func popHop(h []hop) ([]hop, hop) {
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < last && hopLess(&h[l], &h[m]) {
			m = l
		}
		if r < last && hopLess(&h[r], &h[m]) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	return h, top
}

// forge has a liar flood an advert whose signature does not verify: each
// neighbour drops it (the flood verifies before it forwards or delivers).
func (w *World) forge(e event) {
	a := w.agents[e.agent]
	for _, nb := range a.nbrs {
		w.stats.adverts++
		if w.reachable(int(a.idx), int(nb)) {
			w.stats.forged++
		}
	}
	w.tracef(e, "forged advert dropped by %d neighbours", len(a.nbrs))
}
