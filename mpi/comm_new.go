package mpi

import (
	"fmt"
	"slices"
	"sync"
)

// New communicators. Each communicator has its own pair of contexts
// (2v for point-to-point, 2v+1 for collectives, v >= firstComm), so a
// library working on a duplicate never receives the program's messages. v
// is agreed without any central allocator: every process keeps the next
// number it has not used, and Dup and Split take the largest of their
// members' (one Allreduce, or inside the Split's Allgather). A process's
// communicators therefore all have different contexts, and since sender and
// receiver of a message both hold the one communicator it was sent on, that
// is enough to keep every communicator's traffic apart.

// Undefined is the colour passed to Split by a rank that wants no part in
// any of the new communicators.
const Undefined = -1

const (
	firstComm = 2         // contexts 0 and 1 are the world's, 2 and 3 reserved (acknowledgements)
	lastComm  = 1<<30 - 2 // 2v+1 must stay below the ctxSync bit and proto.CtxCheckpoint
)

// tagsCtor shifts the tags of the collectives Dup and Split run on the
// parent, away from the program's own collectives.
const tagsCtor = 1 << 12

// comms is a session's next unused communicator number.
type comms struct {
	mu   sync.Mutex
	next int64
}

func (k *comms) get() int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.next < firstComm {
		k.next = firstComm
	}
	return k.next
}

func (k *comms) used(v int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.next = max(k.next, v+1)
}

// Dup returns a new communicator with the same ranks as c and its own
// message space (MPI_Comm_dup): a message sent on one never matches a
// receive on the other. Every rank of c must call it, in the same order as
// c's other collectives. Dup and Split of different communicators must not
// run at the same time in one process.
func (c *Comm) Dup() (*Comm, error) {
	next := []int64{c.s.comms.get()}
	if err := Allreduce(c.shifted(tagsCtor), next, next, Max[int64]); err != nil {
		return nil, fmt.Errorf("mpi: dup: %w", err)
	}
	v := next[0]
	if v > lastComm {
		return nil, fmt.Errorf("mpi: dup: %w: communicator numbers used up", ErrArg)
	}
	c.s.comms.used(v)
	return c.derive(v, slices.Clone(c.groupOrWorld()), c.rank), nil
}

// Split partitions c by colour (MPI_Comm_split): the ranks passing the
// same colour (>= 0) form a new communicator, ordered by key and then by
// their rank in c. A rank passing Undefined gets a nil communicator and a
// nil error. Every rank of c must call it.
func (c *Comm) Split(color, key int) (*Comm, error) {
	var bad error
	if color < 0 && color != Undefined { // still take part, so the others do not wait for ever
		bad = argErr("split: colour %d (must be >= 0 or Undefined)", color)
		color = Undefined
	}
	mine := []int64{int64(color), int64(key), c.s.comms.get()}
	all := make([]int64, 3*c.size)
	if err := Allgather(c.shifted(tagsCtor), mine, all); err != nil {
		return nil, fmt.Errorf("mpi: split: %w", err)
	}
	v := int64(0)
	for r := 0; r < c.size; r++ {
		v = max(v, all[3*r+2])
	}
	if v > lastComm {
		return nil, fmt.Errorf("mpi: split: %w: communicator numbers used up", ErrArg)
	}
	c.s.comms.used(v)
	if color == Undefined {
		return nil, bad
	}
	members := splitMembers(all, color)
	group := make([]int, len(members))
	rank := 0
	for i, r := range members {
		group[i] = c.worldRank(r)
		if r == c.rank {
			rank = i
		}
	}
	return c.derive(v, group, rank), nil
}

// splitMembers lists the ranks (of the parent) that passed colour, in the
// order of their keys and then of their ranks; all holds (colour, key, _)
// for every rank.
func splitMembers(all []int64, color int) []int {
	var members []int
	for r := 0; r < len(all)/3; r++ {
		if all[3*r] == int64(color) {
			members = append(members, r)
		}
	}
	slices.SortStableFunc(members, func(a, b int) int {
		ka, kb := all[3*a+1], all[3*b+1]
		switch {
		case ka < kb:
			return -1
		case ka > kb:
			return 1
		}
		return 0
	})
	return members
}

// groupOrWorld is c's world ranks, rank by rank.
func (c *Comm) groupOrWorld() []int {
	if c.group != nil {
		return c.group
	}
	g := make([]int, c.size)
	for i := range g {
		g[i] = i
	}
	return g
}

// derive makes the communicator number v over the world ranks group, in
// which this process is rank.
func (c *Comm) derive(v int64, group []int, rank int) *Comm {
	n := &Comm{s: c.s, rank: rank, size: len(group), p2p: uint32(2 * v), coll: uint32(2*v + 1), flat: c.flat,
		hosts: new(hostsOnce)}
	n.setGroup(group)
	return n
}

// shifted is c with its collective tags moved by off, for collectives
// that run inside other ones.
func (c *Comm) shifted(off int) *Comm {
	d := *c
	d.tags += off
	return &d
}

// setGroup makes c's ranks the world ranks group.
func (c *Comm) setGroup(group []int) {
	c.group = group
	c.index = make(map[int]int, len(group))
	for i, w := range group {
		c.index[w] = i
	}
}
