package mpi_test

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/zorilla-p2p/zorilla/mpi"
)

// TestShmPeers: every rank reaches exactly the other ranks of its agent
// through shared memory, on every layout of 1..9 ranks.
func TestShmPeers(t *testing.T) {
	for name, place := range placements {
		for size := 1; size <= 9; size++ {
			t.Run(fmt.Sprintf("%s/%d", name, size), func(t *testing.T) {
				run(t, size, place, func(c *mpi.Comm) error {
					hosts := c.Session().HostOf()
					var want []int
					for r, h := range hosts {
						if r != c.Rank() && h == hosts[c.Rank()] {
							want = append(want, r)
						}
					}
					if got := c.ShmPeers(); !slices.Equal(got, want) {
						return fmt.Errorf("shared memory with %v, want %v (hosts %v)", got, want, hosts)
					}
					return c.Barrier()
				})
			})
		}
	}
}

// TestShmCollectivesOneAgent: every collective on 1..9 ranks all on one
// agent, where every message goes through shared memory (the layouts of
// TestCollectives mix both paths).
func TestShmCollectivesOneAgent(t *testing.T) {
	for n := 1; n <= 9; n++ {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var entered atomic.Int32
			run(t, n, placements["one agent"], func(c *mpi.Comm) error {
				return errors.Join(
					checkBarrier(c, &entered),
					checkBcast(c), checkReduce(c), checkAllreduce(c),
					checkGather(c), checkScatter(c), checkAllgather(c),
					checkAlltoall(c), checkAlltoallv(c),
				)
			})
		})
	}
}

// TestShmPointToPoint: on 1..9 ranks in every layout, every rank sends
// every other one messages of several sizes (one larger than a ring, so it
// wraps while the reader copies out), half of them non-blocking; each
// receiver takes them with AnySource after probing the first, and checks
// sources, order and bytes.
func TestShmPointToPoint(t *testing.T) {
	sizes := []int{0, 8, 70_000, 3 << 19}
	for name, place := range placements {
		for n := 1; n <= 9; n++ {
			t.Run(fmt.Sprintf("%s/%d", name, n), func(t *testing.T) {
				run(t, n, place, func(c *mpi.Comm) error {
					me := c.Rank()
					var reqs []*mpi.Request
					for i, size := range sizes {
						for d := 1; d < n; d++ {
							dst := (me + d) % n
							if size > 1<<20 && dst != (me+1)%n {
								continue // one large message per rank
							}
							msg := pattern(me, i, size)
							if i%2 == 0 {
								reqs = append(reqs, mpi.Isend(c, msg, dst, i))
							} else if err := mpi.Send(c, msg, dst, i); err != nil {
								return err
							}
						}
					}
					buf := make([]byte, 3<<19)
					for i, size := range sizes {
						count := n - 1
						if size > 1<<20 {
							count = min(count, 1)
						}
						for k := 0; k < count; k++ {
							if k == 0 {
								if _, err := c.Probe(mpi.AnySource, i); err != nil {
									return err
								}
							}
							st, err := mpi.Recv(c, buf, mpi.AnySource, i)
							if err != nil {
								return err
							}
							if st.Count != size || !bytes.Equal(buf[:size], pattern(st.Source, i, size)) {
								return fmt.Errorf("message %d from rank %d: %d bytes, wrong content or size", i, st.Source, st.Count)
							}
						}
					}
					return mpi.Waitall(reqs...)
				})
			})
		}
	}
}
