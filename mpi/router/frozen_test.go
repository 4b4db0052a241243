package router_test

import (
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/mpi"
	"github.com/zorilla-p2p/zorilla/mpi/internal/mpitest"
	"github.com/zorilla-p2p/zorilla/mpi/internal/proto"
	"github.com/zorilla-p2p/zorilla/mpi/router"
)

// TestFrozenRankLinksLive: rank 1's process stops reading its socket (as a
// rank frozen for another job's gang slice, or one paging) for two
// heartbeat timeouts while rank 0, on another agent, sends it more than a
// window. Its queue fills and the sender is held back, yet neither agent
// counts the other lost; once it reads again, everything arrives.
func TestFrozenRankLinksLive(t *testing.T) {
	const msgs, size = 24, 1 << 20
	cfg := mpitest.FastConfig()
	cfg.SocketBuffer = 64 << 10 // a socket of 8 MiB would take most of what is sent (flow_test.go)
	c := newCluster(t, 2, cfg)
	j, err := c.AddJob(2, mpitest.RoundRobin(2))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Remove()
	ctx := ctxFor(t, 30*time.Second)
	frozen := dialRaw(t, j.Opts[1].Socket)
	if f := frozen.hello(t, j.Opts[1]); f.Type() != proto.TypeWelcome {
		t.Fatalf("welcome: frame type %d", f.Type())
	}
	sent := make(chan error, 1)
	go func() {
		s, err := mpi.InitWith(ctx, j.Opts[0])
		if err != nil {
			sent <- err
			return
		}
		reqs := make([]*mpi.Request, msgs)
		for i := range reqs {
			reqs[i] = mpi.Isend(s.World(), pattern(i, size), 1, 3)
		}
		err = mpi.Waitall(reqs...)
		sent <- err
	}()
	if err := j.Release(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the frozen rank's queue to fill", func() bool {
		return j.Jobs[1].Stats().Queued >= cfg.Window/2
	})
	frozenFor := time.NewTimer(2 * cfg.HeartbeatTimeout) // the freeze: what is tested is that nothing happens in it
	defer frozenFor.Stop()
	for done := false; !done; {
		select {
		case ev, ok := <-j.Jobs[0].Events():
			noLoss(t, 0, ev, ok)
		case ev, ok := <-j.Jobs[1].Events():
			noLoss(t, 1, ev, ok)
		case err := <-sent:
			t.Fatalf("the sender finished (%v) while the receiver read nothing", err)
		case <-frozenFor.C:
			done = true
		}
	}
	if err := readAll(t, frozen, msgs, size); err != nil {
		t.Fatal(err)
	}
	if err := <-sent; err != nil {
		t.Fatalf("sender: %v", err)
	}
	if _, err := frozen.Write(proto.NewFrame(proto.TypeFinalize, 0)); err != nil {
		t.Fatal(err)
	}
}

// noLoss fails the test on an event that counts an agent lost or fails
// the job.
func noLoss(t *testing.T, agent int, ev router.Event, ok bool) {
	t.Helper()
	if !ok {
		t.Fatalf("agent %d: the job's events ended while a rank was frozen", agent)
	}
	if ev.Kind == router.EventPeerLost || ev.Kind == router.EventFailed {
		t.Fatalf("agent %d: %v while a rank was frozen: %v", agent, ev.Kind, ev.Err)
	}
}
