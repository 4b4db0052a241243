package worker

import (
	"slices"
	"sync"
	"time"

	ma "github.com/multiformats/go-multiaddr"

	"github.com/zorilla-p2p/zorilla/flood"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// The waiting line. A worker that declines an advert only for
// lack of free slots keeps it here until the advert expires, and the
// moment slots free offers them to the earliest job still waiting
// (Precedes): a waiting job is served when the slots free, not when
// its flood's next radius happens to come by. A job that holds a lease
// here stays listed too, so that when an earlier job is refused for lack
// of the slots it holds, it can be asked to give them back (DeclineYield),
// and so that it is offered again after it did.

// waitEntry is one job this worker has seen advertised and may serve.
type waitEntry struct {
	advert flood.Advert // the latest copy: addresses, expiry
	need   proto.Need
	first  time.Time // when this worker first saw the job
	prio   Seniority
	asked  string // the lease this job was asked to yield, if any
	// honoured is the job's priority as this host honours it: a higher
	// one is served first, whatever its place in the line.
	honoured int
}

// WaitConfig bounds the waiting line.
type WaitConfig struct {
	// Max is how many jobs the line holds; when full, a job that comes
	// later than every listed one is not listed, an earlier one takes
	// the place of the latest.
	Max int
	// Skew bounds how much earlier than its first sighting here a job may
	// claim to have been submitted (its advert's Issued): clocks differ a
	// little, and a submitter that lies about its submission gains at
	// most this much on honest ones.
	Skew time.Duration
	// OfferTimeout bounds one offer made from the line: a submitter that
	// does not answer in time holds up the jobs behind it no longer.
	OfferTimeout time.Duration
}

// DefaultWaitConfig returns the settings of a real agent.
func DefaultWaitConfig() WaitConfig {
	return WaitConfig{
		// 64 jobs: more jobs waiting for one machine than this means the
		// network is far too small for its users; the earliest are kept.
		Max: 64,
		// 2 minutes, a job's default scheduling deadline: a job that
		// reaches this agent late in its flood keeps its place.
		Skew: 2 * time.Minute,
		// 3 s: an offer is one round trip and an RTT measurement.
		OfferTimeout: 3 * time.Second,
	}
}

// WaitPriority is the Priority this worker gives a job: its claimed
// submission (the advert's Issued), but not earlier than skew before
// this worker first saw it. Pure.
func WaitPriority(id proto.JobID, issued, first time.Time, skew time.Duration) Seniority {
	since := issued
	if floor := first.Add(-skew); since.Before(floor) {
		since = floor
	}
	return Seniority{Since: since, Job: id}
}

// waitLine is the table of waiting jobs. Its lock guards only the table,
// never I/O; the serve loop (one goroutine) makes the offers.
type waitLine struct {
	cfg WaitConfig

	mu   sync.Mutex
	jobs map[proto.JobID]*waitEntry
	// yields maps a job swapped out for others to them (the set its
	// turn let in, PlanTurn): it is not served here while one of them
	// waits (preempt_shell.go). A mark comes from this host's own plan
	// (key "") or from the job's advert (Need.YieldTo and YieldWith, key
	// its flood key); spent holds, per job, the flood key whose mark was
	// honoured, so that later copies of the same flood do not set it
	// again.
	yields map[proto.JobID]yieldMark
	spent  map[proto.JobID]string
}

type yieldMark struct {
	to  []proto.JobID
	key string
}

func newWaitLine(cfg WaitConfig) *waitLine {
	return &waitLine{cfg: cfg, jobs: map[proto.JobID]*waitEntry{}, yields: map[proto.JobID]yieldMark{}, spent: map[proto.JobID]string{}}
}

// yieldTo records that job j was swapped out for the jobs to: by this
// host's plan (key ""), or as j's advert of flood key says. A flood's mark
// is set once: after it was honoured, its copies change nothing.
func (w *waitLine) yieldTo(j proto.JobID, to []proto.JobID, key string) {
	to = slices.DeleteFunc(slices.Clone(to), func(t proto.JobID) bool { return t == j })
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(to) == 0 || key != "" && w.spent[j] == key {
		return
	}
	w.yields[j] = yieldMark{to: to, key: key}
}

// forget ends j's mark (w.mu held); a flood's mark is spent.
func (w *waitLine) forget(j proto.JobID, m yieldMark) {
	delete(w.yields, j)
	if m.key != "" {
		w.spent[j] = m.key
	}
}

// served is told that job to runs here now (its lease is committed): no
// job yields to it any more, and a mark whose every job ran here has done
// its work and is forgotten (a flood's mark is spent). Were one left until
// its job next asked, it could outlive the turn: when to is swapped out in
// its turn, each would wait for the other. An offer is not enough: a job
// not yet placeable gives its offers back to an earlier job that asks
// (DeclineYield), and the job swapped out, earlier than the one it made
// room for, would ask and take its hosts back one by one, undoing the turn.
func (w *waitLine) served(to proto.JobID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for j, m := range w.yields {
		if !slices.Contains(m.to, to) {
			continue
		}
		if rest := slices.DeleteFunc(slices.Clone(m.to), func(t proto.JobID) bool { return t == to }); len(rest) > 0 {
			w.yields[j] = yieldMark{to: rest, key: m.key}
			continue
		}
		w.forget(j, m)
	}
}

// yielding says whether job j, swapped out here for others, must still
// leave its place to them: one of them is listed with its advert live and
// does not run here yet (runs: a committed lease, Leases.Runs). Once each
// does, or leaves the line, the mark is forgotten: j is served in its turn
// again. While one only holds an offer here, j still yields: it neither
// takes the slots nor asks that job to give its offer back. So a job
// swapped out for a set waits until the whole set runs: were it served
// once the first ran, it would take, being earlier in the line, the room
// its turn made for the others.
func (w *waitLine) yielding(j proto.JobID, runs func(proto.JobID) bool) bool {
	w.mu.Lock()
	m, ok := w.yields[j]
	var waiting []proto.JobID
	if ok {
		for _, t := range m.to {
			if e, listed := w.jobs[t]; listed && time.Now().Before(e.advert.Expires) && !w.waitsFor(t, j, map[proto.JobID]bool{}) {
				waiting = append(waiting, t)
			}
		}
	}
	w.mu.Unlock()
	for _, t := range waiting {
		if !runs(t) {
			return true
		}
	}
	if !ok {
		return false
	}
	w.mu.Lock()
	if cur, marked := w.yields[j]; marked && cur.key == m.key && slices.Equal(cur.to, m.to) {
		w.forget(j, m)
	}
	w.mu.Unlock()
	return false
}

// waitsFor says whether job t yields, itself or through the jobs it yields
// to, to job j (w.mu held): then j does not wait for t, or each would wait
// for the other for as long as both are listed. Marks from adverts can
// meet so: a resumed job's advert, naming the jobs that waited when it was
// swapped out, reaching a host where one of them ran and was swapped out
// for it since.
func (w *waitLine) waitsFor(t, j proto.JobID, seen map[proto.JobID]bool) bool {
	if seen[t] {
		return false
	}
	seen[t] = true
	for _, u := range w.yields[t].to {
		if u == j || w.waitsFor(u, j, seen) {
			return true
		}
	}
	return false
}

// note lists the job of advert a (or refreshes it) and returns its
// priority; false when the line is full of earlier jobs.
func (w *waitLine) note(a flood.Advert, need proto.Need, honoured int, now time.Time) (Seniority, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sweep(now)
	e, ok := w.jobs[need.Job]
	if !ok {
		e = &waitEntry{first: now}
	}
	e.advert, e.need, e.honoured = a, need, honoured
	e.prio = WaitPriority(need.Job, a.Issued, e.first, w.cfg.Skew)
	if !ok && len(w.jobs) >= w.cfg.Max {
		latest := w.latest()
		if !Precedes(e.prio, latest.prio) {
			return e.prio, false
		}
		delete(w.jobs, latest.need.Job)
	}
	w.jobs[need.Job] = e
	return e.prio, true
}

// latest is the entry every other precedes. The line is not empty.
func (w *waitLine) latest() *waitEntry {
	var out *waitEntry
	for _, e := range w.jobs {
		if out == nil || Precedes(out.prio, e.prio) {
			out = e
		}
	}
	return out
}

// drop forgets a job: it runs here, or it said it needs nothing more.
func (w *waitLine) drop(j proto.JobID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.jobs, j)
}

// askedToYield remembers that job j was asked to give back lease key.
func (w *waitLine) askedToYield(j proto.JobID, key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e, ok := w.jobs[j]; ok {
		e.asked = key
	}
}

// cancelled is told that job j gave back lease key: a job that yields it
// as asked stays in the line, to be offered again; any other cancel (an
// offer the plan did not use, a job that ended) means it needs nothing
// more here.
func (w *waitLine) cancelled(j proto.JobID, key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e, ok := w.jobs[j]; ok && e.asked == key {
		e.asked = ""
		return
	}
	delete(w.jobs, j)
}

// addrs returns the addresses a listed job's submitter gave.
func (w *waitLine) addrs(j proto.JobID) []ma.Multiaddr {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e, ok := w.jobs[j]; ok {
		return e.advert.Addrs
	}
	return nil
}

// priority returns a listed job's priority.
func (w *waitLine) priority(j proto.JobID) (Seniority, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	e, ok := w.jobs[j]
	if !ok {
		return Seniority{}, false
	}
	return e.prio, true
}

// ordered returns the live entries, earliest first.
func (w *waitLine) ordered(now time.Time) []waitEntry {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sweep(now)
	out := make([]waitEntry, 0, len(w.jobs))
	for _, e := range w.jobs {
		out = append(out, *e)
	}
	slices.SortFunc(out, func(a, b waitEntry) int {
		if a.honoured != b.honoured {
			return b.honoured - a.honoured // higher priority first
		}
		if a.need.Grow != b.need.Grow {
			return boolOrder(a.need.Grow) // a job waiting to start before one that grows
		}
		if Precedes(a.prio, b.prio) {
			return -1
		}
		return 1
	})
	return out
}

// boolOrder sorts false before true.
func boolOrder(grow bool) int {
	if grow {
		return 1
	}
	return -1
}

// nextExpiry is when the first listed advert expires.
func (w *waitLine) nextExpiry() (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var first time.Time
	for _, e := range w.jobs {
		if first.IsZero() || e.advert.Expires.Before(first) {
			first = e.advert.Expires
		}
	}
	return first, !first.IsZero()
}

func (w *waitLine) sweep(now time.Time) {
	for j, e := range w.jobs {
		if !now.Before(e.advert.Expires) {
			delete(w.jobs, j)
		}
	}
	for j, m := range w.yields {
		if !slices.ContainsFunc(m.to, func(t proto.JobID) bool { _, listed := w.jobs[t]; return listed }) {
			delete(w.yields, j) // the jobs yielded to need nothing more here
		}
	}
	for j := range w.spent {
		if _, listed := w.jobs[j]; !listed {
			delete(w.spent, j)
		}
	}
}
