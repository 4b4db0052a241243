package router_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/mpi"
	"github.com/zorilla-p2p/zorilla/mpi/internal/mpitest"
	"github.com/zorilla-p2p/zorilla/mpi/router"
)

// checkedProgram runs iters iterations of a ring exchange, an Alltoall of
// block bytes per pair and an Allreduce, and checks every value it
// receives: a lost, repeated or mixed-up message fails it. hook runs at
// the start of each iteration.
func checkedProgram(iters, block int, hook func(cm *mpi.Comm, it int)) func(cm *mpi.Comm) error {
	return func(cm *mpi.Comm) error {
		n, me := cm.Size(), cm.Rank()
		send, recv := make([]byte, n*block), make([]byte, n*block)
		for it := range iters {
			hook(cm, it)
			in := make([]int64, 1)
			if _, err := mpi.Sendrecv(cm, []int64{int64(1000*me + it)}, (me+1)%n, 1, in, (me+n-1)%n, 1); err != nil {
				return fmt.Errorf("iteration %d: ring: %w", it, err)
			}
			if want := int64(1000*((me+n-1)%n) + it); in[0] != want {
				return fmt.Errorf("iteration %d: ring got %d, want %d", it, in[0], want)
			}
			if block > 0 {
				for dst := range n {
					fillPair(send[dst*block:(dst+1)*block], me, dst, it)
				}
				if err := mpi.Alltoall(cm, send, recv); err != nil {
					return fmt.Errorf("iteration %d: alltoall: %w", it, err)
				}
				want := make([]byte, block)
				for src := range n {
					fillPair(want, src, me, it)
					if string(recv[src*block:(src+1)*block]) != string(want) {
						return fmt.Errorf("iteration %d: block from rank %d differs", it, src)
					}
				}
			}
			sum := make([]int64, 1)
			if err := mpi.Allreduce(cm, []int64{int64(me*it + 1)}, sum, mpi.Sum); err != nil {
				return fmt.Errorf("iteration %d: allreduce: %w", it, err)
			}
			if want := int64(it*n*(n-1)/2 + n); sum[0] != want {
				return fmt.Errorf("iteration %d: sum %d, want %d", it, sum[0], want)
			}
		}
		return nil
	}
}

func fillPair(b []byte, src, dst, it int) {
	x := uint64(src+1)*0x9e3779b97f4a7c15 ^ uint64(dst)<<32 ^ uint64(it) | 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
}

// failoverTrials is how many seeded trials each failover case runs: two
// in the ordinary test run, one under -short, ZORILLA_FAILOVER_TRIALS
// (e.g. 20) by hand.
func failoverTrials(t *testing.T) int {
	if s := os.Getenv("ZORILLA_FAILOVER_TRIALS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("ZORILLA_FAILOVER_TRIALS=%q", s)
		}
		return n
	}
	if testing.Short() {
		return 1
	}
	return 2
}

// fault is what happens to the victim agent.
type fault int

const (
	killHost fault = iota // its host closes at once: every connection drops, nothing answers
	cutHost               // it is cut off the network longer than the heartbeat timeout; its agent lives
)

// failoverPlace puts copy k of rank r on agent (r+k) mod 4: every agent
// holds the lead of one rank and the backup of another.
func failoverPlace(r, k int) int { return (r + k) % 4 }

// TestFailover: a job of 4 ranks with 2 copies each on 4 agents loses one
// agent, killed or cut off, at a seeded point: right after the start,
// inside a collective (a multi-fragment Alltoall), mid-run, near the end,
// or in the middle of an Alltoall of 3 MiB blocks (96 fragments each).
// Every copy on the other agents completes with every message checked, and
// their routers never fail the job. Under -short (CI's run with the race
// detector, where every case costs tens of seconds) each fault strikes
// inside a collective only.
func TestFailover(t *testing.T) {
	trials := failoverTrials(t)
	points := []string{"start", "collective", "mid", "end", "big"}
	if testing.Short() {
		points = []string{"collective"}
	}
	for _, f := range []fault{killHost, cutHost} {
		for _, point := range points {
			for trial := range trials {
				seed := uint64(trial*31 + int(f)*7 + len(point))
				name := fmt.Sprintf("%s/%s/%d", map[fault]string{killHost: "kill", cutHost: "cut"}[f], point, seed)
				t.Run(name, func(t *testing.T) { failoverTrial(t, seed, f, point) })
			}
		}
	}
}

func failoverTrial(t *testing.T, seed uint64, f fault, point string) {
	iters, block := 24, 200<<10
	if point == "big" {
		iters, block = 4, 3<<20
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	cfg := mpitest.FastConfig()
	cfg.MaxData = 32 << 10 // a block is several fragments
	c := newCluster(t, 4, cfg)
	j, err := c.AddReplicatedJob(4, 2, failoverPlace)
	if err != nil {
		t.Fatal(err)
	}
	victim := rng.IntN(4)
	at := map[string]int{"start": 0, "collective": 1 + rng.IntN(iters-2), "mid": iters / 2, "end": iters - 1, "big": 1}[point]
	delay := time.Duration(rng.IntN(3000)) * time.Microsecond
	if point == "big" {
		delay = time.Duration(rng.IntN(40)) * time.Millisecond // while the blocks stream
	}
	var once sync.Once
	var firing atomic.Bool
	fired := make(chan struct{})
	hook := func(cm *mpi.Comm, it int) {
		if it != at || failoverPlace(cm.Rank(), cm.Session().Replica()) != victim {
			return
		}
		once.Do(func() {
			firing.Store(true)
			go func() {
				defer close(fired)
				if point == "collective" || point == "big" {
					time.Sleep(delay) // lands inside the iteration's collectives
				}
				if f == killHost {
					_ = c.Hosts[victim].Close()
				} else {
					c.Cut(victim)
				}
			}()
		})
	}
	events := make([]<-chan []router.Event, 4)
	for a, rj := range j.Jobs {
		events[a] = drain(rj)
	}
	errs := j.Run(ctxFor(t, 30*time.Second), checkedProgram(iters, block, hook))
	if !firing.Load() { // the job ended before the victim's copy reached the fault's iteration
		t.Fatalf("the fault never fired: the victim's copy never reached iteration %d; ranks' errors %v", at, errs)
	}
	<-fired
	for i, o := range j.Opts {
		if failoverPlace(o.Rank, o.Replica) != victim && errs[i] != nil {
			t.Errorf("rank %d copy %d on agent %d: %v", o.Rank, o.Replica, failoverPlace(o.Rank, o.Replica), errs[i])
		}
	}
	for a, ch := range events {
		evs := <-ch
		if a != victim && count(evs, router.EventFailed) != 0 {
			t.Errorf("agent %d failed the job: %v", a, evs)
		}
	}
}

// TestShortCut: an agent cut off for less than the heartbeat timeout is not
// lost: its links open again, what was in flight is sent again, and the job
// completes on every agent with nothing lost or repeated.
func TestShortCut(t *testing.T) {
	cfg := mpitest.FastConfig()
	cfg.MaxData = 32 << 10
	c := newCluster(t, 4, cfg)
	j, err := c.AddReplicatedJob(4, 2, failoverPlace)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	hook := func(cm *mpi.Comm, it int) {
		if it == 5 && cm.Rank() == 2 {
			once.Do(func() {
				c.Cut(1)
				time.AfterFunc(cfg.HeartbeatTimeout/4, func() { c.Heal(1) })
			})
		}
	}
	events := make([]<-chan []router.Event, 4)
	for a, rj := range j.Jobs {
		events[a] = drain(rj)
	}
	noErrors(t, j.Run(ctxFor(t, 30*time.Second), checkedProgram(12, 100<<10, hook)))
	for a, ch := range events {
		if evs := <-ch; count(evs, router.EventPeerLost)+count(evs, router.EventFailed) != 0 {
			t.Errorf("agent %d: %v", a, evs)
		}
	}
}

// TestLeadOnlyTraffic: with lead-only sending, a replicated job puts half
// the MSG bytes on the wire of every copy sending (each message goes from
// one copy of its sender to both copies of its destination, not from both).
func TestLeadOnlyTraffic(t *testing.T) {
	sent := map[bool]int64{}
	for _, every := range []bool{false, true} {
		cfg := mpitest.FastConfig()
		cfg.EveryCopySends = every
		c := newCluster(t, 4, cfg)
		j, err := c.AddReplicatedJob(4, 2, failoverPlace)
		if err != nil {
			t.Fatal(err)
		}
		noErrors(t, j.Run(ctxFor(t, 30*time.Second), checkedProgram(4, 64<<10, func(*mpi.Comm, int) {})))
		for _, r := range c.Routers {
			sent[every] += r.Sent().Bytes
		}
	}
	ratio := float64(sent[false]) / float64(sent[true])
	t.Logf("MSG bytes on links: lead-only %d, every copy %d (%.2f)", sent[false], sent[true], ratio)
	if ratio < 0.4 || ratio > 0.6 {
		t.Errorf("lead-only sends %.2f of every-copy traffic, want about half", ratio)
	}
}

// TestPairCut: two agents lose sight of each other while both still reach
// everyone else. The first to count the other lost tells everyone, so all
// agents count it lost and it leaves the job (fenced), perhaps both; with
// copies placed so that no rank lives only on those two, the other agents
// complete the job, and never hang on an agent only some of them see.
func TestPairCut(t *testing.T) {
	c := newCluster(t, 4, mpitest.FastConfig())
	place := func(r, k int) int { return (r + 2*k) % 4 } // copies of a rank on agents r and r+2
	j, err := c.AddReplicatedJob(4, 2, place)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	hook := func(cm *mpi.Comm, it int) {
		if it == 3 {
			once.Do(func() { c.CutPair(0, 1) })
		}
	}
	events := make([]<-chan []router.Event, 4)
	for a, rj := range j.Jobs {
		events[a] = drain(rj)
	}
	errs := j.Run(ctxFor(t, 30*time.Second), checkedProgram(30, 20<<10, hook))
	for i, o := range j.Opts {
		if a := place(o.Rank, o.Replica); a >= 2 && errs[i] != nil {
			t.Errorf("rank %d copy %d on agent %d: %v", o.Rank, o.Replica, a, errs[i])
		}
	}
	for a, ch := range events {
		evs := <-ch
		if lost := count(evs, router.EventPeerLost); a >= 2 && (count(evs, router.EventFailed) != 0 || lost < 1 || lost > 2) {
			t.Errorf("agent %d: %v", a, evs)
		}
	}
}

// TestRemovedBeforeEOF: an agent removes a replicated job as soon as its
// processes there have ended, which can be before its router has read the
// end of their connections. A copy not finalized at removal is a lost
// copy: the other copy of its rank takes over and the job completes
// everywhere else; it does not fail the job ("ended while ranks were
// running"). Agent 3 holds only the lead copy of rank 0, so nothing else
// keeps the job there. Five trials, two under -short.
func TestRemovedBeforeEOF(t *testing.T) {
	place := func(r, k int) int { return [][]int{{3, 0}, {1, 2}, {2, 1}}[r][k] }
	const iters, block = 24, 64 << 10
	trials := 5
	if testing.Short() {
		trials = 2
	}
	for trial := range trials {
		t.Run(fmt.Sprint(trial), func(t *testing.T) {
			c := newCluster(t, 4, mpitest.FastConfig())
			j, err := c.AddReplicatedJob(3, 2, place)
			if err != nil {
				t.Fatal(err)
			}
			var once sync.Once
			removed := make(chan struct{})
			hook := func(cm *mpi.Comm, it int) {
				if it == iters/2 && place(cm.Rank(), cm.Session().Replica()) == 3 {
					once.Do(func() {
						// The copy's connection is still open: the router
						// has read no end of it when the job goes.
						c.Routers[3].RemoveJob(j.ID)
						close(removed)
					})
				}
			}
			events := make([]<-chan []router.Event, 4)
			for a, rj := range j.Jobs {
				events[a] = drain(rj)
			}
			errs := j.Run(ctxFor(t, 30*time.Second), checkedProgram(iters, block, hook))
			<-removed
			for i, o := range j.Opts {
				if place(o.Rank, o.Replica) != 3 && errs[i] != nil {
					t.Errorf("rank %d copy %d: %v", o.Rank, o.Replica, errs[i])
				}
			}
			for a, ch := range events {
				if evs := <-ch; a != 3 && count(evs, router.EventFailed) != 0 {
					t.Errorf("agent %d failed the job: %v", a, evs)
				}
			}
		})
	}
}
