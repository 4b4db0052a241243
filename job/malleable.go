package job

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

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

// WorldSize is the number of ranks of the job's current (or last) run: the
// size it was placed at, which for a rigid job is always n.
func (r Record) WorldSize() int {
	if r.Size > 0 {
		return r.Size
	}
	return r.Desc.Nodes
}
