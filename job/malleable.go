package job

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/job/proto"
)

// Malleable jobs. A job submitted with -n MIN:MAX starts as soon as MIN
// processes can be placed and changes size at its checkpoints within
// [MIN, MAX]: it grows when more hosts offer slots, shrinks at once onto
// the hosts left when one is lost, and gives slots back so that a job of
// equal or higher priority waiting for them can start. Every resize is a
// stop at a checkpoint whose channels were empty and a restart at the new
// size, the hosts it keeps keeping their slots.

// DefaultResizeEvery is the least time between two resizes of a job: a
// resize costs a checkpoint, a stop and a restart (a second or two on
// loopback), so a job that resized every few seconds would mostly
// restart.
const DefaultResizeEvery = 30 * time.Second

// MaxResizes bounds the size history a record keeps (the oldest go).
const MaxResizes = 64

// Malleable reports whether the job's size may change: -n MIN:MAX with
// MIN < MAX.
func (d Description) Malleable() bool { return d.MinNodes > 0 && d.MinNodes < d.Nodes }

// SizeRange is the job's least and largest number of ranks (equal for a
// rigid job).
func (d Description) SizeRange() (lo, hi int) {
	if d.Malleable() {
		return d.MinNodes, d.Nodes
	}
	return d.Nodes, d.Nodes
}

// ParseProcs reads -n's value: "N" (a rigid job) or "MIN:MAX" (a
// malleable one). For a rigid job lo is 0. Bounds are Validate's.
func ParseProcs(s string) (lo, hi int, err error) {
	a, b, ranged := strings.Cut(strings.TrimSpace(s), ":")
	num := func(v string) (int, error) {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return 0, fmt.Errorf("want a whole number or MIN:MAX such as 2:8, got %q", s)
		}
		return n, nil
	}
	if !ranged {
		hi, err = num(a)
		return 0, hi, err
	}
	if lo, err = num(a); err == nil {
		hi, err = num(b)
	}
	switch {
	case err != nil:
		return 0, 0, err
	case lo < 1 || hi < lo:
		return 0, 0, fmt.Errorf("want 1 <= MIN <= MAX, got %q", s)
	case lo == hi:
		return 0, hi, nil // 4:4 is a rigid job of 4
	}
	return lo, hi, nil
}

// FormatProcs writes a job's size as -n takes it.
func (d Description) FormatProcs() string {
	if d.Malleable() {
		return fmt.Sprintf("%d:%d", d.MinNodes, d.Nodes)
	}
	return strconv.Itoa(d.Nodes)
}

// checkMalleable refuses what a malleable job cannot do: its size changes
// only at checkpoints, which replicated and MPICH jobs do not take.
func (d Description) checkMalleable() error {
	if d.MinNodes == 0 {
		return nil
	}
	if err := checkRange("min_nodes", d.MinNodes, 1, d.Nodes); err != nil {
		return err
	}
	if !d.Malleable() {
		return nil
	}
	switch {
	case d.Replicas > 1:
		return errors.New("nodes: a malleable job (MIN:MAX) changes size at its checkpoints, which a replicated job does not take; use -r 1 or a fixed -n")
	case d.PMI:
		return errors.New("nodes: a malleable job (MIN:MAX) changes size at its checkpoints, which an MPICH (--pmi) job does not take; use a fixed -n")
	case d.ResizeEvery < time.Second || d.ResizeEvery > proto.MaxTimeout:
		return fmt.Errorf("resize_every: must be between 1s and %v, got %v", proto.MaxTimeout, d.ResizeEvery)
	}
	return nil
}

// Resize is one change of a running job's size, as its record keeps it.
type Resize struct {
	At   time.Time `json:"at"`
	From int       `json:"from"`
	To   int       `json:"to"`
	Why  string    `json:"why"` // "grew", "host lost", "gave way to JOB", "fell back: ..."
}

// AppendResize adds a resize to a record's history, keeping the newest
// MaxResizes.
func AppendResize(rs []Resize, r Resize) []Resize {
	if len(r.Why) > MaxReasonLen {
		r.Why = r.Why[:MaxReasonLen]
	}
	rs = append(rs, r)
	if len(rs) > MaxResizes {
		rs = append([]Resize(nil), rs[len(rs)-MaxResizes:]...)
	}
	return rs
}

// WorldSize is the number of ranks of the job's current (or last) start:
// the size it was placed at, which for a rigid job is always n.
func (r Record) WorldSize() int {
	if r.Plan != nil && r.Plan.N > 0 {
		return r.Plan.N
	}
	return r.Desc.Nodes
}

// PlaceRange places a job of r = 1 at the largest size from lo to hi that
// the offers of rlist can hold (Place at that size); with lo = hi it is
// Place. An infeasible range gives Place's error at lo.
func PlaceRange(s Strategy, rlist []Offer, lo, hi int) (Plan, error) {
	capacity := 0
	for _, o := range rlist {
		capacity += Capacity(o, hi)
	}
	for n := min(hi, capacity); n > lo; n-- {
		if p, err := Place(s, rlist, n, 1); err == nil {
			return p, nil
		}
	}
	return Place(s, rlist, lo, 1)
}

// RestartRange is the sizes the job's next start may take: its range,
// except that a start from a checkpoint with messages in flight at its
// cut (not Quiet) must have that checkpoint's size.
func (r Record) RestartRange() (lo, hi int) {
	lo, hi = r.Desc.SizeRange()
	if c, ok := r.LastComplete(); ok && r.Desc.Replicas == 1 && c.Size > 0 && !c.Quiet() {
		return c.Size, c.Size
	}
	return lo, hi
}

// shrinkPlan is the plan of a malleable job that lost hosts while it ran
// on the hosts left, at the largest size they hold within its range; false
// when they hold too little (or the job is not malleable).
func shrinkPlan(r Record, lost map[peer.ID]bool) (Plan, bool) {
	if !r.Desc.Malleable() || r.Plan == nil || r.Plan.R != 1 {
		return Plan{}, false
	}
	var left []Offer
	for _, o := range r.Plan.Offers() {
		if !lost[o.Peer] {
			left = append(left, o)
		}
	}
	lo, hi := r.RestartRange()
	p, err := PlaceRange(r.Desc.Strategy, left, lo, hi)
	return p, err == nil
}

// Waiter is a job that waits for slots a malleable job holds, as a host
// that asks it to give way describes it: its size (N), and for a
// malleable one its least size (Min, 0 for a rigid job).
type Waiter struct {
	Job ID
	N   int
	Min int
}

// GiveWayTarget is the size a malleable job of size now and least size lo
// shrinks to so that the jobs waiting for its slots can start: the jobs
// share what it holds in equal parts. Each waiting job is let in with
// the least it can start with that fits in an equal part (a rigid one
// with its n, a malleable one with its equal part within its range); a
// waiting job that does not fit in an equal part is not let in (it waits
// as before), and the job never goes below lo. The result is now when
// nothing is to be given. Pure.
func GiveWayTarget(now, lo int, waiting []Waiter) int {
	if now <= lo || len(waiting) == 0 {
		return now
	}
	share := now / (len(waiting) + 1)
	give := 0
	for _, w := range waiting {
		least := w.N
		if w.Min > 0 {
			least = w.Min
		}
		if least > share {
			continue
		}
		give += min(w.N, max(least, share))
	}
	return max(lo, now-give)
}

// HostsToGive lists the hosts of plan (r = 1) a job gives back to shrink
// to target processes: those that asked first (a job waits there), then
// the farthest, each only while the job keeps at least target processes.
// Pure.
func HostsToGive(p Plan, askers []peer.ID, target int) []peer.ID {
	hosts := slices.Clone(p.Hosts)
	sort.SliceStable(hosts, func(i, j int) bool {
		ai, aj := slices.Contains(askers, hosts[i].Offer.Peer), slices.Contains(askers, hosts[j].Offer.Peer)
		if ai != aj {
			return ai
		}
		return hosts[i].Offer.RTT > hosts[j].Offer.RTT
	})
	left := p.N
	var out []peer.ID
	for _, h := range hosts {
		if left-len(h.Procs) >= target {
			out = append(out, h.Offer.Peer)
			left -= len(h.Procs)
		}
	}
	return out
}

// PlaceOn places the job d describes on offers: an MPICH job by its own
// rule, a malleable one at the largest size they hold within its range,
// any other at its n (what a dry run shows).
func (d Description) PlaceOn(offers []Offer) (Plan, error) {
	lo, hi := d.SizeRange()
	switch {
	case d.PMI:
		return PlacePMI(d.Strategy, offers, d.Nodes)
	case lo < hi:
		return PlaceRange(d.Strategy, offers, lo, hi)
	}
	return Place(d.Strategy, offers, hi, d.Replicas)
}
