package job

import (
	"fmt"
	"strings"
)

// Strategy is how processes are mapped onto the selected hosts (P2P-MPI
// section 4.3).
type Strategy string

const (
	// Spread maps processes round-robin over slist, one per host first and
	// closest hosts first: most memory per process, locality second.
	Spread Strategy = "spread"
	// Concentrate fills each host of slist up to its capacity, in order:
	// most locality between processes.
	Concentrate Strategy = "concentrate"
)

// DefaultStrategy is Spread: P2P-MPI notes it is the safe choice for
// memory-hungry programs, and it never piles processes onto one host while
// others sit idle.
const DefaultStrategy = Spread

// ParseStrategy reads a strategy name as given to `-a`.
func ParseStrategy(s string) (Strategy, error) {
	switch st := Strategy(strings.TrimSpace(s)); st {
	case Spread, Concentrate:
		return st, nil
	}
	return "", fmt.Errorf("strategy: must be %q or %q, got %q", Spread, Concentrate, s)
}

// allocate runs the strategy's algorithm and returns u, the number of
// processes mapped onto each host of slist. slist must be feasible.
func allocate(s Strategy, slist []Offer, n, r int) ([]int, error) {
	c := make([]int, len(slist))
	for i, o := range slist {
		c[i] = Capacity(o, n)
	}
	switch s {
	case Spread:
		return spread(c, n*r), nil
	case Concentrate:
		return concentrate(c, n*r), nil
	}
	return nil, fmt.Errorf("strategy: must be %q or %q, got %q", Spread, Concentrate, s)
}

// spread is P2P-MPI's spread algorithm: pass over the hosts in order, giving
// one process to each host below its capacity, until total processes are
// mapped. A pass that maps nothing ends it (only possible when the hosts
// cannot hold total, which Feasible rules out).
func spread(c []int, total int) []int {
	u := make([]int, len(c))
	d := 0
	for d < total {
		progress := false
		for i := 0; i < len(c) && d < total; i++ {
			if u[i] < c[i] {
				u[i]++
				d++
				progress = true
			}
		}
		if !progress {
			break
		}
	}
	return u
}

// concentrate is P2P-MPI's concentrate algorithm: each host in order takes
// min(c_i, what is left). The paper's outer loop never runs twice once the
// request is feasible, so one pass is the whole algorithm.
func concentrate(c []int, total int) []int {
	u := make([]int, len(c))
	d := 0
	for i := 0; i < len(c) && d < total; i++ {
		u[i] = min(c[i], total-d)
		d += u[i]
	}
	return u
}
