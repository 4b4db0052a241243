package gang

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"time"
)

// NoColumn marks a job that takes no part in the rotation: it always runs
// (co-scheduled with whatever else runs here).
const NoColumn = -1

// MaxColumns bounds Config.Columns: a row of free columns fits in a uint64.
const MaxColumns = 64

// Config is the rotation every agent of a grid must share.
type Config struct {
	// Slice is the length L of one time slice. Freezing and thawing a job
	// takes well under a millisecond, so slices of seconds cost nothing in
	// switches and tolerate tens of ms of clock skew.
	Slice time.Duration
	// Columns is M, the slices of one round: the most jobs that take turns
	// on one host. It should be at least the owner's J.
	Columns int
}

// DefaultConfig is 2 s slices and 4 columns: a round of 8 s, so each of
// four jobs sharing hosts runs at least a quarter of every 8 s.
func DefaultConfig() Config { return Config{Slice: 2 * time.Second, Columns: 4} }

// Validate reports a Config no rotation can use.
func (c Config) Validate() error {
	if c.Slice < time.Millisecond {
		return fmt.Errorf("gang: slice %v is shorter than 1ms", c.Slice)
	}
	if c.Columns < 1 || c.Columns > MaxColumns {
		return fmt.Errorf("gang: %d columns, want 1..%d", c.Columns, MaxColumns)
	}
	return nil
}

// Slot is the index of the slice that holds now, counted from the epoch.
func (c Config) Slot(now time.Time) int64 {
	n := now.UnixNano()
	s := int64(c.Slice)
	q := n / s
	if n%s < 0 {
		q--
	}
	return q
}

// Current is the column whose slice holds now.
func (c Config) Current(now time.Time) int {
	m := int64(c.Columns)
	return int(((c.Slot(now) % m) + m) % m)
}

// NextSwitch is the start of the slice after the one that holds now.
func (c Config) NextSwitch(now time.Time) time.Time {
	return time.Unix(0, (c.Slot(now)+1)*int64(c.Slice))
}

// Runnable reports whether a job of column col may run now on a host whose
// gang-scheduled jobs hold the columns occupied: in its own slices, in the
// slices no job here holds, always when it takes no part in the rotation or
// is alone in it.
func (c Config) Runnable(now time.Time, col int, occupied []int) bool {
	if col == NoColumn || !hasOther(occupied, col) {
		return true
	}
	cur := c.Current(now)
	return cur == col || !slices.Contains(occupied, cur)
}

// hasOther reports whether occupied holds a column other than col.
func hasOther(occupied []int, col int) bool {
	for _, o := range occupied {
		if o != col && o != NoColumn {
			return true
		}
	}
	return false
}

// FreeColumns is the mask of the columns no job in occupied holds (bit i:
// column i), for the offer.
func (c Config) FreeColumns(occupied []int) uint64 {
	all := uint64(1)<<c.Columns - 1
	if c.Columns == MaxColumns {
		all = ^uint64(0)
	}
	for _, o := range occupied {
		if o >= 0 && o < c.Columns {
			all &^= 1 << o
		}
	}
	return all
}

// ErrNoCommonColumn says no column is free on every host of a plan: the job
// shares a column with another on some hosts (they run co-scheduled in it).
var ErrNoCommonColumn = errors.New("gang: no column is free on every host")

// PickColumn chooses the column of a job placed on hosts whose offers had
// the free masks free (Config.FreeColumns): the lowest column free on all
// of them; else, with ErrNoCommonColumn, the column free on the most hosts
// (lowest on ties), which the caller may still use: there the job shares
// a column and runs co-scheduled with the job that holds it. It needs no
// Config: a host's mask never has bits past its Columns.
func PickColumn(free []uint64) (int, error) {
	common := ^uint64(0)
	for _, f := range free {
		common &= f
	}
	if common != 0 {
		return bits.TrailingZeros64(common), nil
	}
	best, bestN := 0, -1
	for col := range MaxColumns {
		n := 0
		for _, f := range free {
			if f&(1<<col) != 0 {
				n++
			}
		}
		if n > bestN {
			best, bestN = col, n
		}
	}
	return best, ErrNoCommonColumn
}
