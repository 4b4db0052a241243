package mpi_test

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

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

// TestShmPointToPoint: on 1..9 ranks (jobSizes) in every layout, every
// rank sends every other one messages of several sizes (one larger than a
// ring, so it wraps while the reader copies out), half of them
// non-blocking; each receiver takes them with AnySource after probing the
// first, and checks sources, order and bytes.
func TestShmPointToPoint(t *testing.T) {
	sizes := []int{0, 8, 70_000, 3 << 19}
	for name, place := range placements {
		for _, n := range jobSizes() {
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

// TestShmReceivePolls: in a ping-pong between two ranks on one agent, the
// blocked receive reads its source's ring itself (the fast path) for some
// of the messages (unless one P for the two makes it sleep at once: -cpu
// 1), every message arrives intact and in order whoever reads
// it, and with AnySource too; and a third rank on another agent mixed into
// AnySource receives is matched as before.
func TestShmReceivePolls(t *testing.T) {
	const rounds = 2000
	place := func(r int) int { // ranks 0 and 1 share agent 0; rank 2 is alone
		if r == 2 {
			return 1
		}
		return 0
	}
	run(t, 3, place, func(c *mpi.Comm) error {
		if c.Rank() == 2 { // through the agents, among ring messages to rank 0
			for i := 0; i < 10; i++ {
				if err := mpi.Send(c, []int64{-int64(i)}, 0, 7); err != nil {
					return err
				}
			}
			return c.Barrier()
		}
		other := 1 - c.Rank()
		got, fromTwo := make([]int64, 1), 0
		for i := 0; i < rounds; i++ {
			src := other
			if i%2 == 1 {
				src = mpi.AnySource
			}
			if c.Rank() == 0 {
				if err := mpi.Send(c, []int64{int64(i)}, other, 0); err != nil {
					return err
				}
			}
			for {
				st, err := mpi.Recv(c, got, src, mpi.AnyTag)
				if err != nil {
					return err
				}
				if st.Source == 2 { // only rank 0 gets these, with AnySource
					if c.Rank() != 0 || st.Tag != 7 || got[0] != -int64(fromTwo) {
						return fmt.Errorf("rank %d: %d from rank 2 with tag %d, want %d tag 7", c.Rank(), got[0], st.Tag, -fromTwo)
					}
					fromTwo++
					continue
				}
				if st.Source != other || got[0] != int64(i) {
					return fmt.Errorf("rank %d round %d: %d from rank %d", c.Rank(), i, got[0], st.Source)
				}
				break
			}
			if c.Rank() == 1 {
				if err := mpi.Send(c, []int64{int64(i)}, other, 0); err != nil {
					return err
				}
			}
		}
		if c.Rank() == 0 {
			for ; fromTwo < 10; fromTwo++ {
				if _, err := mpi.Recv(c, got, 2, 7); err != nil || got[0] != -int64(fromTwo) {
					return fmt.Errorf("from rank 2: %d, %v, want %d", got[0], err, -fromTwo)
				}
			}
		}
		polled, standby := c.ShmFrames()
		if polled+standby < rounds { // (and the peer's first barrier message, maybe)
			return fmt.Errorf("rank %d read %d+%d frames from its ring, want %d", c.Rank(), polled, standby, rounds)
		}
		if polled == 0 && !c.PollsCapped() { // (with one P for two ranks a receive sleeps at once)
			return fmt.Errorf("rank %d: no receive read its ring itself (%d by the standby reader)", c.Rank(), standby)
		}
		return c.Barrier() // through the ring too, but after the counts
	})
}

// TestShmAlltoallvPosted: with every rank on one agent, Alltoallv posts all
// its blocks at once through the rings; blocks larger than a ring (so the
// writer waits for readers while other blocks are posted), empty blocks and
// blocks of every size in between arrive whole and in place, on 2..5 ranks,
// several times over so that one call's blocks never match the next's.
// With ranks on several agents the pairwise steps stay.
func TestShmAlltoallvPosted(t *testing.T) {
	for n := 2; n <= 5; n++ {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			run(t, n, placements["one agent"], func(c *mpi.Comm) error {
				if !mpi.AlltoallvPosted(c) {
					return fmt.Errorf("rank %d of %d on one agent does not post its blocks", c.Rank(), n)
				}
				for round := range 3 {
					if err := checkAlltoallvLarge(c, round); err != nil {
						return err
					}
				}
				return nil
			})
		})
	}
	run(t, 4, placements["spread"], func(c *mpi.Comm) error {
		if mpi.AlltoallvPosted(c) {
			return fmt.Errorf("rank %d of 4 on four agents posts its blocks", c.Rank())
		}
		return checkAlltoallvLarge(c, 0)
	})
}

// TestShmEngineAmidTraffic: the exchange engine moves Alltoallv's blocks
// while other messages share the rings: a message on another communicator
// sent before the collective and received after it (read by the engine in
// the middle of the blocks, and matched later), and a large Isend that
// may still be being written when the collective starts (the engine then
// stands aside and the posted path runs; which path ran is not checked,
// what arrived is). Everything arrives whole, in order, on 2..4 ranks, and
// on the halves of a split.
func TestShmEngineAmidTraffic(t *testing.T) {
	for n := 2; n <= 4; n++ {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			run(t, n, placements["one agent"], func(c *mpi.Comm) error {
				me, next, prev := c.Rank(), (c.Rank()+1)%n, (c.Rank()+n-1)%n
				side, err := c.Dup()
				if err != nil {
					return err
				}
				big := make([]byte, 3<<20) // three rings' worth
				for i := range big {
					big[i] = byte(me + i)
				}
				for round := range 3 {
					if err := mpi.Send(side, []byte{byte(me), byte(round)}, next, 5); err != nil {
						return err
					}
					var pending *mpi.Request
					if round == 1 {
						pending = mpi.Isend(c, big, next, 6)
					}
					if err := checkAlltoallvLarge(c, round); err != nil {
						return fmt.Errorf("round %d: %w", round, err)
					}
					got := make([]byte, 2)
					if _, err := mpi.Recv(side, got, prev, 5); err != nil {
						return err
					}
					if got[0] != byte(prev) || got[1] != byte(round) {
						return fmt.Errorf("round %d: side message %v from rank %d", round, got, prev)
					}
					if pending != nil {
						in := make([]byte, len(big))
						if _, err := mpi.Recv(c, in, prev, 6); err != nil {
							return err
						}
						for i := range in {
							if in[i] != byte(prev+i) {
								return fmt.Errorf("large message from rank %d: byte %d is %d", prev, i, in[i])
							}
						}
						if _, err := pending.Wait(); err != nil {
							return err
						}
					}
				}
				if c.EngineRuns() == 0 {
					return fmt.Errorf("rank %d: no exchange went through the engine", me)
				}
				// On a split: the engine holds only its members' rings.
				sub, err := c.Split(me%2, me)
				if err != nil || sub == nil {
					return fmt.Errorf("split: %v", err)
				}
				return checkAlltoallvLarge(sub, 1)
			})
		})
	}
}

// TestShmAlltoallvWaitsForReceiver: on one agent, a block of Alltoallv
// goes to a rank only once that rank posted its receives. Rank 1 enters
// first; rank 0 waits until something of rank 1's arrived, which must be
// its empty "ready", never the block (which the old eager path sent at
// once, to be read into a buffer of its own while rank 0 was busy), and
// only then enters. Both end with the right blocks.
func TestShmAlltoallvWaitsForReceiver(t *testing.T) {
	const k = 64 << 10 // int32s a block: 256 KiB
	run(t, 2, placements["one agent"], func(c *mpi.Comm) error {
		me, peer := c.Rank(), 1-c.Rank()
		if me == 0 {
			deadline := time.Now().Add(time.Minute)
			for len(c.Unexpected(peer)) == 0 {
				if time.Now().After(deadline) {
					return fmt.Errorf("nothing of rank %d arrived in a minute", peer)
				}
				time.Sleep(time.Millisecond)
			}
			if got := c.Unexpected(peer); !slices.Equal(got, []int{0}) {
				return fmt.Errorf("before its receives were posted, rank 0 got messages of %v bytes from rank 1, want only the empty ready", got)
			}
		}
		send, recv := make([]int32, 2*k), make([]int32, 2*k)
		for i := range send {
			send[i] = int32(me<<24 | i)
		}
		counts, displs := []int{k, k}, []int{0, k}
		if err := mpi.Alltoallv(c, send, counts, displs, recv, counts, displs); err != nil {
			return err
		}
		for j := range 2 {
			for i := range k {
				if want := int32(j<<24 | me*k + i); recv[j*k+i] != want {
					return fmt.Errorf("element %d from rank %d: %#x, want %#x", i, j, recv[j*k+i], want)
				}
			}
		}
		return nil
	})
}

// TestShmPollsCapped: ranks poll their rings before they sleep only when
// their agent has no more ranks than cores (GOMAXPROCS, set here for the
// ranks of this process); with more, every wait sleeps at once, and the
// collectives still give the right results.
func TestShmPollsCapped(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for procs := 1; procs <= 2; procs++ {
		for n := 2; n <= 3; n++ {
			t.Run(fmt.Sprintf("cores=%d/ranks=%d", procs, n), func(t *testing.T) {
				runtime.GOMAXPROCS(procs)
				var entered atomic.Int32
				run(t, n, placements["one agent"], func(c *mpi.Comm) error {
					if got, want := c.PollsCapped(), n > procs; got != want {
						return fmt.Errorf("%d ranks on %d cores: polls capped %v, want %v", n, procs, got, want)
					}
					return errors.Join(checkBarrier(c, &entered), checkAllreduce(c), checkAlltoallv(c))
				})
			})
		}
	}
}

// checkAlltoallvLarge: rank i sends rank j blockLen(i, j) int32s, element
// k being value(i, j, k); block (i, j) is empty when i+j+round is a
// multiple of 3, and the others range up to 1.2 MiB.
func checkAlltoallvLarge(c *mpi.Comm, round int) error {
	n, me := c.Size(), c.Rank()
	blockLen := func(i, j int) int {
		if (i+j+round)%3 == 0 {
			return 0
		}
		return 1 + (i*7919+j*104729+round*31)%(300_000)
	}
	value := func(i, j, k int) int32 { return int32(i<<28 | j<<24 | k) }
	sc, sd, rc, rd := make([]int, n), make([]int, n), make([]int, n), make([]int, n)
	var send []int32
	for j := range n {
		sc[j], sd[j] = blockLen(me, j), len(send)
		for k := range sc[j] {
			send = append(send, value(me, j, k))
		}
	}
	total := 0
	for i := range n {
		rc[i], rd[i] = blockLen(i, me), total
		total += rc[i]
	}
	recv := make([]int32, total)
	if err := mpi.Alltoallv(c, send, sc, sd, recv, rc, rd); err != nil {
		return err
	}
	for i := range n {
		for k := range rc[i] {
			if got := recv[rd[i]+k]; got != value(i, me, k) {
				return fmt.Errorf("round %d: rank %d, element %d of rank %d's block: %#x, want %#x", round, me, k, i, got, value(i, me, k))
			}
		}
	}
	return nil
}

// TestShmSmallMessages: small messages through shared memory keep the
// receive's semantics whether the receive was posted first or not: a
// message longer than the buffer truncates and the next one still
// arrives, unexpected ones are matched by tag out of order, a synchronous
// send completes once matched, and sizes around the bound of the small
// path arrive intact.
func TestShmSmallMessages(t *testing.T) {
	sizes := []int{0, 1, 8, 4 << 10, 4<<10 + 1}
	run(t, 2, placements["one agent"], func(c *mpi.Comm) error {
		if c.Rank() == 0 {
			if err := errors.Join(mpi.Send(c, []byte("too long"), 1, 0), mpi.Send(c, []byte("ok"), 1, 0)); err != nil {
				return err
			}
			for i, size := range sizes {
				if err := mpi.Send(c, pattern(0, i, size), 1, 10+i); err != nil {
					return err
				}
			}
			if err := c.Barrier(); err != nil { // rank 1 receives them only now
				return err
			}
			return mpi.Ssend(c, []byte("sync"), 1, 1)
		}
		small := make([]byte, 2)
		if _, err := mpi.Recv(c, small, 0, 0); !errors.Is(err, mpi.ErrTruncate) {
			return fmt.Errorf("truncation: %v", err)
		}
		if st, err := mpi.Recv(c, small, 0, 0); err != nil || string(small[:st.Count]) != "ok" {
			return fmt.Errorf("after truncation: %q, %v", small, err)
		}
		if err := c.Barrier(); err != nil {
			return err
		}
		buf := make([]byte, 8<<10)
		for i := len(sizes) - 1; i >= 0; i-- { // the last sent first
			st, err := mpi.Recv(c, buf, 0, 10+i)
			if err != nil {
				return err
			}
			if st.Count != sizes[i] || !bytes.Equal(buf[:st.Count], pattern(0, i, sizes[i])) {
				return fmt.Errorf("message of %d bytes: got %d, wrong content or size", sizes[i], st.Count)
			}
		}
		if st, err := mpi.Recv(c, buf, 0, 1); err != nil || string(buf[:st.Count]) != "sync" {
			return fmt.Errorf("synchronous send: %q, %v", buf[:st.Count], err)
		}
		return nil
	})
}
