package main

import (
	"container/heap"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/overlay"
)

// params are what the simulation assumes of a network and its agents.
type params struct {
	n        int           // agents
	dialable float64       // share of agents others can dial (the rest never provide)
	session  time.Duration // mean time between restarts of an agent (exponential)
	down     time.Duration // how long a restart keeps an agent away
	fill     time.Duration // from a lookup that reached an agent to knowing enough peers
	settle   time.Duration // from start to the overlay DHT's size estimate
	noise    float64       // spread of that estimate: it is n*exp(noise*z), z normal
	warm     time.Duration // simulated before measuring; agents start in the first hour
	window   time.Duration // measured
	seed     uint64
}

// Public DHT facts the model uses (go-libp2p-kad-dht v0.38.0's amino
// defaults): how long a provider record lives, and how many peers a
// lookup's answer names besides the providers (the bucket size).
const (
	recordLife = 48 * time.Hour
	bucketSize = 20
	want       = 8   // overlay.DefaultConfig: K + Random
	maxKnown   = 256 // overlay.DefaultConfig: MaxKnown
	maxFound   = 4   // overlay: a lookup takes at most 4*Providers providers
	dhtMinSize = 21  // kad-dht's size estimator needs full buckets
)

// result is what one simulated network did in the measured window.
type result struct {
	lookups, provides float64 // per second
	heals             float64 // lookups per second of agents that were not hungry
	records, useful   float64 // records under the key, and of those, agents up (mean)
	maxRecords        int
	joins, joined     int // starts in the window, and those whose first lookup reached an agent
}

type agent struct {
	id       peer.ID
	draw     float64
	dialable bool

	up, fed, settled bool
	factor           float64 // the estimate's error in this session
	look             overlay.LookupState
	u                float64
	lastLookup       time.Time
	looked           bool
	found, base      int
	provided         time.Time
	first            bool // the next lookup is the session's first
	session          int  // ends stale events
	lookupGen        int
}

type record struct{ expiry, since time.Time }

type sim struct {
	p       params
	cfg     overlay.RendezvousConfig
	rng     *rand.Rand
	t0, now time.Time
	agents  []*agent
	records map[int]record
	queue   events
	seq     int
	res     result
	samples int
}

// simulate runs the agents' rule (overlay.RendezvousConfig's NextLookup
// and ShouldProvide) for a network of p.n agents.
func simulate(p params, cfg overlay.RendezvousConfig) result {
	s := &sim{p: p, cfg: cfg, rng: rand.New(rand.NewPCG(p.seed, uint64(p.n))),
		t0: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), records: map[int]record{}}
	s.now = s.t0
	for i := range p.n {
		id := peer.ID(fmtID(p.seed, i))
		a := &agent{id: id, draw: overlay.ProviderDraw(cfg.Network, id), dialable: s.rng.Float64() < p.dialable}
		s.agents = append(s.agents, a)
		s.push(s.t0.Add(time.Duration(s.rng.Float64()*float64(time.Hour))), i, evStart, 0)
	}
	end := s.t0.Add(p.warm + p.window)
	for sample := s.t0.Add(p.warm); sample.Before(end); sample = sample.Add(10 * time.Minute) {
		s.push(sample, -1, evSample, 0)
	}
	for s.queue.Len() > 0 {
		e := heap.Pop(&s.queue).(event)
		if e.at.After(end) {
			break
		}
		s.now = e.at
		s.handle(e)
	}
	secs := p.window.Seconds()
	s.res.lookups /= secs
	s.res.heals /= secs
	s.res.provides /= secs
	s.res.records /= float64(s.samples)
	s.res.useful /= float64(s.samples)
	return s.res
}

func (s *sim) measuring() bool { return !s.now.Before(s.t0.Add(s.p.warm)) }

func (s *sim) handle(e event) {
	if e.kind == evSample {
		s.sample()
		return
	}
	a := s.agents[e.agent]
	if e.kind != evStart && e.session != a.session {
		return
	}
	switch e.kind {
	case evStart:
		s.start(e.agent)
	case evStop:
		a.up = false
		a.session++
		s.push(s.now.Add(s.p.down), e.agent, evStart, 0)
	case evLookup:
		if e.gen == a.lookupGen {
			s.lookup(e.agent)
		}
	case evFed:
		a.fed = true
		s.decide(e.agent)
	case evSettle:
		a.settled = s.p.n >= dhtMinSize
		s.decide(e.agent)
	case evProvide:
		s.decide(e.agent)
	}
}

func (s *sim) start(i int) {
	a := s.agents[i]
	a.session++
	a.up, a.fed, a.settled, a.looked, a.first = true, false, false, false, true
	a.look, a.provided, a.lastLookup = overlay.LookupState{}, time.Time{}, time.Time{}
	a.factor = math.Exp(s.p.noise * s.rng.NormFloat64())
	if s.measuring() {
		s.res.joins++
	}
	s.push(s.now.Add(s.p.settle), i, evSettle, a.session)
	s.push(s.now.Add(time.Duration(s.rng.ExpFloat64()*float64(s.p.session))), i, evStop, a.session)
	s.decide(i)
}

// observe is what the agent's overlay shows: nobody until it has joined,
// then its peer table, and the DHT's estimate once settled.
func (s *sim) observe(a *agent) (known, estimate int) {
	if !a.fed {
		return 0, 1
	}
	known = min(s.p.n-1, maxKnown)
	estimate = known + 1
	if a.settled {
		estimate = max(estimate, int(float64(s.p.n)*a.factor))
	}
	return known, estimate
}

// lookup finds the records under the key, as the agent's Rendezvous does.
func (s *sim) lookup(i int) {
	a := s.agents[i]
	known, estimate := s.observe(a)
	a.look = a.look.Observe(known, known, want, estimate)
	hungry := a.look.Hungry()
	if s.measuring() {
		s.res.lookups++
		if !hungry {
			s.res.heals++
		}
	}
	found, reached, base, fresh := 0, 0, 0, 0
	for _, j := range s.liveRecords() {
		if j == i || found == maxFound*s.cfg.Providers {
			continue
		}
		found++
		b := s.agents[j]
		if !b.up {
			continue
		}
		reached++
		if s.cfg.IsBase(b.draw, estimate) {
			base++
		}
		if a.lastLookup.IsZero() || s.records[j].since.After(a.lastLookup) {
			fresh++
		}
	}
	if a.first && s.measuring() && reached > 0 {
		s.res.joined++
	}
	a.first = false
	a.look.Last, a.lastLookup, a.u = s.now, s.now, s.rng.Float64()
	a.looked, a.found, a.base = true, found, base
	switch {
	case fresh > 0 || !hungry:
		a.look.Attempts = 0
	default:
		a.look.Attempts++
	}
	if reached > 0 && !a.fed {
		s.push(s.now.Add(s.p.fill), i, evFed, a.session)
	}
	s.decide(i)
}

// liveRecords lists the agents with a record under the key, in order.
func (s *sim) liveRecords() []int {
	var out []int
	for j, r := range s.records {
		if r.expiry.After(s.now) {
			out = append(out, j)
		} else {
			delete(s.records, j)
		}
	}
	slices.Sort(out)
	return out
}

// decide announces the agent if ShouldProvide says so and its record is
// due, and schedules its next lookup.
func (s *sim) decide(i int) {
	a := s.agents[i]
	known, estimate := s.observe(a)
	a.look = a.look.Observe(known, known, want, estimate)
	should := s.cfg.ShouldProvide(overlay.ProvideState{Dialable: a.dialable, Draw: a.draw,
		Estimate: estimate, Settled: a.settled, Looked: a.looked, Found: a.found, FoundBase: a.base})
	a.look.Providing = should
	if should && (a.provided.IsZero() || s.now.Sub(a.provided) >= s.cfg.Provide) {
		since := s.now
		if r, ok := s.records[i]; ok && r.expiry.After(s.now) {
			since = r.since
		}
		s.records[i] = record{expiry: s.now.Add(recordLife), since: since}
		a.provided = s.now
		if s.measuring() {
			s.res.provides++
		}
		s.push(s.now.Add(s.cfg.Provide), i, evProvide, a.session)
	}
	due := s.cfg.NextLookup(a.look, a.u)
	if due.Before(s.now) {
		due = s.now
	}
	a.lookupGen++
	e := event{at: due, agent: i, kind: evLookup, session: a.session, gen: a.lookupGen}
	s.seq++
	e.seq = s.seq
	heap.Push(&s.queue, e)
}

func (s *sim) sample() {
	s.samples++
	n := 0
	for _, j := range s.liveRecords() {
		n++
		if s.agents[j].up {
			s.res.useful++
		}
	}
	s.res.records += float64(n)
	s.res.maxRecords = max(s.res.maxRecords, n)
}

func (s *sim) push(at time.Time, i int, kind evKind, session int) {
	s.seq++
	heap.Push(&s.queue, event{at: at, seq: s.seq, agent: i, kind: kind, session: session})
}

type evKind int

const (
	evStart evKind = iota
	evStop
	evLookup
	evFed
	evSettle
	evProvide
	evSample
)

type event struct {
	at           time.Time
	seq          int
	agent        int
	kind         evKind
	session, gen int
}

// events is a heap of events, earliest first, in order of scheduling
// among equals: the run is the same for the same seed.
type events []event

func (q events) Len() int { return len(q) }
func (q events) Less(i, j int) bool {
	return q[i].at.Before(q[j].at) || q[i].at.Equal(q[j].at) && q[i].seq < q[j].seq
}
func (q events) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *events) Push(x any)   { *q = append(*q, x.(event)) }
func (q *events) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}
