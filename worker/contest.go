package worker

import (
	"sort"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/job/proto"
)

// The yield rule: when a job is refused here for lack of room
// (slots, cores, J or memory) while jobs it precedes hold uncommitted
// leases, it asks them to give the room back (proto.DeclineYield); a job
// that cannot be placed yet does, and the line offers the room to the
// earliest job. Every agent applies the same order (honoured priority,
// then Precedes), so two jobs that each hold part of what they need
// never both wait: the contested hosts all go to the earlier one.

// Contender is a job refused here for lack of room, as the yield rule
// sees it: what it asks, and its place in the line.
type Contender struct {
	Submitter peer.ID
	Need      proto.Need
	Since     Seniority // its place among equal priorities (WaitPriority)
	Honoured  int       // its priority as this host honours it
}

// Contested returns the uncommitted leases that contender c, refused here
// for lack of room, asks to be given back. Candidates are the leases of
// the jobs c precedes: a lower honoured priority, or an equal one later
// in the line (prio gives a holder's place; an equal holder without one
// is left alone). They are taken lowest priority first, then the latest
// first, and only as many as let c be offered as many processes as all
// of them would: a job that holds room c does not need keeps it. When
// even all of them would not let c in (running jobs hold the room), or c
// fits already, none is asked: a job that gives back room c cannot use
// is only offered it again, and loses its place meanwhile. Pure.
func Contested(p Policy, u Usage, leases []Lease, c Contender, prio func(proto.JobID) (Seniority, bool)) []Lease {
	if Decide(p, u, c.Submitter, c.Need).Accept {
		return nil
	}
	var cands []Lease
	place := map[string]Seniority{}
	for _, l := range leases {
		if l.Committed || l.Job == c.Need.Job || l.Priority > c.Honoured {
			continue
		}
		hp, ok := prio(l.Job)
		// A job that only grows gives its offers back to any job of its
		// priority waiting to start, whatever their places in the line.
		grows := l.Need.Grow && !c.Need.Grow
		if l.Priority == c.Honoured && !grows && (!ok || !Precedes(c.Since, hp)) {
			continue
		}
		cands, place[l.Key] = append(cands, l), hp
	}
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if a.Priority != b.Priority {
			return a.Priority < b.Priority
		}
		return Precedes(place[b.Key], place[a.Key]) // the latest gives way first
	})
	best := Decide(p, withoutLeases(u, cands), c.Submitter, c.Need)
	if !best.Accept {
		return nil
	}
	for k := 1; k < len(cands); k++ {
		if d := Decide(p, withoutLeases(u, cands[:k]), c.Submitter, c.Need); d.Accept && d.Slots >= best.Slots {
			return cands[:k:k]
		}
	}
	return cands
}

// withoutLeases is u once the uncommitted leases ls are given back: no
// process of theirs runs, so each held its cores, its place among the J
// and its declared memory, nothing measured.
func withoutLeases(u Usage, ls []Lease) Usage {
	for _, l := range ls {
		u.Jobs--
		u.Cores -= l.Cores
		u.Memory -= l.Memory
	}
	return u
}

// askYield tells the submitter of each lease contender c contests here
// (Contested) that an earlier job waits for its room (proto.DeclineYield),
// once per lease and contender, within the decline rate. A lease whose
// offer its submitter has not kept yet is asked later (askForLine, once
// it is): sent now, the ask could reach the submitter before the offer,
// which it then ignores (it holds nothing from this host), and the two
// jobs would each hold part of the hosts until their deadlines.
func (s *Service) askYield(c Contender) {
	if s.holds(c.Need.Job) || s.yields(c.Need.Job) {
		return
	}
	for _, l := range Contested(s.leases.Policy(), s.leases.Usage(), s.leases.List(), c, s.waiting.priority) {
		if !l.Held || !s.declines.claim("yield/"+l.Key+"/"+string(c.Need.Job)) {
			continue
		}
		log.Debugw("asking a later job to yield", "holder", l.Job, "for", c.Need.Job, "host", s.h.ID())
		s.waiting.askedToYield(l.Job, l.Key)
		msg, to, addrs := proto.DeclineMsg{Job: l.Job, Code: proto.DeclineYield}, l.Submitter, s.waiting.addrs(l.Job)
		s.wg.Add(1)
		go func() { // the line's goroutine does not wait on a stream
			defer s.wg.Done()
			s.tell(to, addrs, msg)
		}()
	}
}

// askForLine applies the yield rule for every job waiting here for room,
// in the line's order: called when slots change hands (the line was
// served) and when a submitter keeps an offer (a lease it may now be
// asked to give back).
func (s *Service) askForLine() {
	for _, e := range s.waiting.ordered(time.Now()) {
		s.askYield(Contender{Submitter: e.advert.Submitter, Need: e.need, Since: e.prio, Honoured: e.honoured})
	}
}

// MarkHeld records that the submitter of lease key kept its offer: from
// now on a yield asked of it reaches a submitter that holds it.
func (l *Leases) MarkHeld(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ls, ok := l.byKey[key]; ok {
		ls.Held = true
	}
}
