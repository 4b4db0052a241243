package router_test

import (
	"errors"
	"fmt"
	jobproto "github.com/zorilla-p2p/zorilla/job/proto"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/mpi"
	"github.com/zorilla-p2p/zorilla/mpi/internal/mpitest"
	"github.com/zorilla-p2p/zorilla/mpi/router"
)

// drain collects a job's events until RemoveJob closes the channel.
func drain(j *router.Job) <-chan []router.Event {
	out := make(chan []router.Event, 1)
	go func() {
		var evs []router.Event
		for ev := range j.Events() {
			evs = append(evs, ev)
		}
		out <- evs
	}()
	return out
}

func count(evs []router.Event, kind router.EventKind) int {
	n := 0
	for _, ev := range evs {
		if ev.Kind == kind {
			n++
		}
	}
	return n
}

// TestEventsCleanRun: a job that ends well reports Init and Finalized once
// per local rank and nothing else, and its events channel closes on
// RemoveJob.
func TestEventsCleanRun(t *testing.T) {
	c := newCluster(t, 2, mpitest.FastConfig())
	j, err := c.AddJob(5, mpitest.RoundRobin(2))
	if err != nil {
		t.Fatal(err)
	}
	evs := []<-chan []router.Event{drain(j.Jobs[0]), drain(j.Jobs[1])}
	noErrors(t, j.Run(ctxFor(t, 20*time.Second), func(c *mpi.Comm) error { return c.Barrier() }))
	for a, want := range []int{3, 2} {
		got := <-evs[a]
		if count(got, router.EventInit) != want || count(got, router.EventFinalized) != want || len(got) != 2*want {
			t.Errorf("agent %d events: %+v", a, got)
		}
	}
}

// TestEventsAbort: Abort is reported with its rank and code on the agent of
// the rank and on the others, followed by Failed.
func TestEventsAbort(t *testing.T) {
	c := newCluster(t, 2, mpitest.FastConfig())
	j, err := c.AddJob(2, mpitest.RoundRobin(2))
	if err != nil {
		t.Fatal(err)
	}
	evs := []<-chan []router.Event{drain(j.Jobs[0]), drain(j.Jobs[1])}
	j.Run(ctxFor(t, 20*time.Second), func(c *mpi.Comm) error {
		if c.Rank() == 1 {
			return c.Session().Abort(42)
		}
		_, err := mpi.Recv(c, make([]byte, 1), 1, 0)
		return err
	})
	for a := range evs {
		got := <-evs[a]
		var abort, failed *router.Event
		for i := range got {
			switch got[i].Kind {
			case router.EventAbort:
				abort = &got[i]
			case router.EventFailed:
				failed = &got[i]
			}
		}
		if abort == nil || abort.Rank != 1 || abort.Code != 42 || (a == 0) != (abort.Peer != "") {
			t.Errorf("agent %d abort event %+v", a, abort)
		}
		var f *router.Failure
		if failed == nil || !errors.As(failed.Err, &f) || f.Rank != 1 || f.Code != 42 {
			t.Errorf("agent %d failed event %+v", a, failed)
		}
	}
}

// TestEarlyFinish: an agent whose ranks all finished may remove the job
// while the others still work; the others do not fail for it.
func TestEarlyFinish(t *testing.T) {
	c := newCluster(t, 3, mpitest.FastConfig())
	j, err := c.AddJob(3, mpitest.RoundRobin(3))
	if err != nil {
		t.Fatal(err)
	}
	removed := make(chan struct{})
	errs := make([]error, 3)
	done := make(chan struct{})
	go func() {
		defer close(done)
		copy(errs, j.Run(ctxFor(t, 20*time.Second), func(cm *mpi.Comm) error {
			if err := cm.Barrier(); err != nil {
				return err
			}
			if cm.Rank() == 2 {
				return nil
			}
			<-removed
			return pingPong(50)(cm)
		}))
	}()
	waitEvent(t, j.Jobs[2], router.EventFinalized)
	c.Routers[2].RemoveJob(j.ID)
	close(removed)
	<-done
	noErrors(t, errs)
}

// TestRemoveWhileRunning: removing a job from one agent while its ranks
// still run fails the job everywhere, so nobody waits for them.
func TestRemoveWhileRunning(t *testing.T) {
	c := newCluster(t, 2, mpitest.FastConfig())
	j, err := c.AddJob(2, mpitest.RoundRobin(2))
	if err != nil {
		t.Fatal(err)
	}
	errs := j.Run(ctxFor(t, 20*time.Second), func(cm *mpi.Comm) error {
		if err := cm.Barrier(); err != nil {
			return err
		}
		if cm.Rank() == 1 {
			go c.Routers[1].RemoveJob(j.ID)
		}
		_, err := mpi.Recv(cm, make([]byte, 1), mpi.AnySource, 3)
		return err
	})
	for r, err := range errs {
		if !errors.Is(err, mpi.ErrJobFailed) {
			t.Errorf("rank %d: %v, want the job failed", r, err)
		}
	}
}

// TestRouterClose: Close is idempotent, refuses new jobs, and a new router
// can take over the socket path of a closed one.
func TestRouterClose(t *testing.T) {
	c := newCluster(t, 1, mpitest.FastConfig())
	r := c.Routers[0]
	path := r.Socket()
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode: %v %v", fi.Mode(), err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	spec := router.JobSpec{ID: "x", Size: 1, Replicas: 1, Table: jobproto.RankTableOf([][]peer.ID{{c.Hosts[0].ID()}}, nil), Local: []router.Proc{{}}}
	if _, err := r.AddJob(spec); !errors.Is(err, router.ErrClosed) {
		t.Fatalf("closed router: AddJob gave %v", err)
	}
	r2, err := router.New(c.Hosts[0], path, mpitest.FastConfig())
	if err != nil {
		t.Fatalf("new router on the same path: %v", err)
	}
	c.Routers[0] = r2
	if _, err := router.New(c.Hosts[0], path, mpitest.FastConfig()); err == nil {
		t.Fatal("second router on a socket in use")
	}
}

// TestJobIDReuse: a job ID is unique while the job is here, and may be
// added again once removed (a retried start).
func TestJobIDReuse(t *testing.T) {
	c := newCluster(t, 1, mpitest.FastConfig())
	r := c.Routers[0]
	spec := router.JobSpec{ID: "again", Key: "k1", Size: 1, Replicas: 1,
		Table: jobproto.RankTableOf([][]peer.ID{{c.Hosts[0].ID()}}, nil), Local: []router.Proc{{}}}
	if _, err := r.AddJob(spec); err != nil {
		t.Fatal(err)
	}
	if _, err := r.AddJob(spec); !errors.Is(err, router.ErrJobExists) {
		t.Fatalf("second add: %v", err)
	}
	r.RemoveJob(spec.ID)
	spec.Key = "k2"
	if _, err := r.AddJob(spec); err != nil {
		t.Fatalf("add after remove: %v", err)
	}
	opt := mpi.Options{Socket: r.Socket(), Job: "again", Key: "k1", Size: 1}
	if _, err := mpi.InitWith(ctxFor(t, 5*time.Second), opt); !errors.Is(err, mpi.ErrRefused) {
		t.Fatalf("old key after re-add: %v", err)
	}
}

// TestReplicatedRanks: with two copies of every rank on distinct agents,
// every copy sends to every copy of its destination, and the routers drop
// the duplicates: each copy of a rank sees every message once, in order,
// and the copies compute the same results.
func TestReplicatedRanks(t *testing.T) {
	c := newCluster(t, 3, mpitest.FastConfig())
	j, err := c.AddReplicatedJob(4, 2, func(r, k int) int { return (r + k) % 3 })
	if err != nil {
		t.Fatal(err)
	}
	results := make(chan string, len(j.Opts))
	noErrors(t, j.Run(ctxFor(t, 20*time.Second), func(cm *mpi.Comm) error {
		n, me := cm.Size(), cm.Rank()
		for i := 0; i < 20; i++ { // a stream of numbered messages around the ring
			out := []int64{int64(100*me + i)}
			in := make([]int64, 1)
			if _, err := mpi.Sendrecv(cm, out, (me+1)%n, 1, in, (me+n-1)%n, 1); err != nil {
				return err
			}
			if want := int64(100*((me+n-1)%n) + i); in[0] != want {
				return fmt.Errorf("message %d: got %d, want %d", i, in[0], want)
			}
		}
		sum := make([]float64, 1)
		if err := mpi.Allreduce(cm, []float64{float64(me) + 0.25}, sum, mpi.Sum); err != nil {
			return err
		}
		if ok, _, _ := cm.Iprobe(mpi.AnySource, mpi.AnyTag); ok {
			return fmt.Errorf("a duplicate message is waiting")
		}
		results <- fmt.Sprintf("rank %d replica %d: %v", me, cm.Session().Replica(), sum[0])
		return nil
	}))
	close(results)
	got := 0
	for r := range results {
		if !strings.HasSuffix(r, ": 7") {
			t.Errorf("%s, want 7", r)
		}
		got++
	}
	if got != 8 {
		t.Errorf("%d copies reported, want 8", got)
	}
}

// TestLateAttach: a copy that connects after the job was released gets its
// Start with its Welcome, and messages sent to it before it connected wait
// for it.
func TestLateAttach(t *testing.T) {
	c := newCluster(t, 2, mpitest.FastConfig())
	j, err := c.AddJob(2, mpitest.RoundRobin(2))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Remove()
	ctx := ctxFor(t, 20*time.Second)
	first := make(chan error, 1)
	go func() {
		s, err := mpi.InitWith(ctx, j.Opts[0])
		if err == nil {
			err = mpi.Send(s.World(), []byte("early"), 1, 0)
		}
		first <- err
	}()
	waitEvent(t, j.Jobs[0], router.EventInit)
	j.Jobs[0].Release()
	j.Jobs[1].Release() // before rank 1 ever connected
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	s, err := mpi.InitWith(ctx, j.Opts[1])
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	st, err := mpi.Recv(s.World(), buf, 0, 0)
	if err != nil || string(buf[:st.Count]) != "early" {
		t.Fatalf("late rank got %q, %v", buf[:st.Count], err)
	}
}
