package router_test

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/mpi"
	"github.com/zorilla-p2p/zorilla/mpi/internal/mpitest"
	"github.com/zorilla-p2p/zorilla/mpi/internal/proto"
	"github.com/zorilla-p2p/zorilla/mpi/router"
)

// TestBadClientsRefused: garbage, an oversized frame, a frame that is not a
// hello, silence, a wrong key, an unknown job, a rank that does not run
// here and a second connection for a connected rank are all refused and
// closed — while another job runs ping-pong through the same agents,
// unharmed.
func TestBadClientsRefused(t *testing.T) {
	cfg := mpitest.FastConfig()
	cfg.HelloTimeout = 300 * time.Millisecond
	c := newCluster(t, 2, cfg)
	busy, err := c.AddJob(2, mpitest.RoundRobin(2))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan []error, 1)
	go func() { done <- busy.Run(ctxFor(t, 20*time.Second), pingPong(2000)) }()

	victim, err := c.AddJob(2, func(int) int { return 0 })
	if err != nil {
		t.Fatal(err)
	}
	defer victim.Remove()
	sock := c.Routers[0].Socket()
	opt := victim.Opts[0]

	raw := dialRaw(t, sock)
	_, _ = raw.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	check(t, "garbage", raw.refusal(proto.RefuseMalformed))

	raw = dialRaw(t, sock)
	var huge [5]byte
	binary.LittleEndian.PutUint32(huge[:], 1<<30)
	huge[4] = proto.TypeHello
	_, _ = raw.Write(huge[:])
	check(t, "oversized frame", raw.refusal(proto.RefuseMalformed))

	raw = dialRaw(t, sock)
	_, _ = raw.Write(proto.NewFrame(proto.TypeFinalize, 0))
	check(t, "not a hello", raw.refusal(proto.RefuseMalformed))

	raw = dialRaw(t, sock)
	check(t, "silence", raw.refusal(proto.RefuseMalformed))

	for name, tc := range map[string]struct {
		mutate func(o *mpi.Options)
		code   uint8
	}{
		"wrong key":      {func(o *mpi.Options) { o.Key = "guess" }, proto.RefuseKey},
		"unknown job":    {func(o *mpi.Options) { o.Job = "nope" }, proto.RefuseUnknown},
		"wrong size":     {func(o *mpi.Options) { o.Size = 3 }, proto.RefuseMember},
		"wrong replica":  {func(o *mpi.Options) { o.Replica = 2 }, proto.RefuseMember},
		"rank elsewhere": {func(o *mpi.Options) { o.Rank = 1; o.Socket = c.Routers[1].Socket() }, proto.RefuseUnknown},
	} {
		o := opt
		tc.mutate(&o)
		raw = dialRaw(t, o.Socket)
		h := proto.Hello{Version: proto.Version, Rank: uint32(o.Rank), Size: uint32(o.Size),
			Replica: uint32(o.Replica), Job: o.Job, Key: o.Key}
		_, _ = raw.Write(h.Encode())
		check(t, name, raw.refusal(tc.code))
	}

	first := dialRaw(t, sock)
	if f := first.hello(t, opt); f.Type() != proto.TypeWelcome {
		t.Fatalf("first connection of rank 0: frame type %d", f.Type())
	}
	second := dialRaw(t, sock)
	h := proto.Hello{Version: proto.Version, Rank: 0, Size: 2, Job: opt.Job, Key: opt.Key}
	_, _ = second.Write(h.Encode())
	check(t, "second connection of a rank", second.refusal(proto.RefuseDuplicate))

	noErrors(t, <-done)
	if err := victim.Jobs[0].Err(); err != nil {
		t.Errorf("refusals harmed the job they named: %v", err)
	}
}

func check(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Errorf("%s: %v", what, err)
	}
}

// TestGarbageAfterHello: a connected rank that sends garbage is its own
// job's problem (the rank counts as lost, the job fails), never another
// job's.
func TestGarbageAfterHello(t *testing.T) {
	c := newCluster(t, 2, mpitest.FastConfig())
	busy, err := c.AddJob(2, mpitest.RoundRobin(2))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan []error, 1)
	go func() { done <- busy.Run(ctxFor(t, 20*time.Second), pingPong(500)) }()

	bad, err := c.AddJob(1, func(int) int { return 0 })
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Remove()
	raw := dialRaw(t, bad.Opts[0].Socket)
	if f := raw.hello(t, bad.Opts[0]); f.Type() != proto.TypeWelcome {
		t.Fatalf("frame type %d", f.Type())
	}
	h := proto.MsgHeader{Dst: 5, Total: 1} // rank 5 of a 1-rank job
	_, _ = raw.Write(append(proto.MsgFrame(&h, 1), 'x'))
	if ev := waitEvent(t, bad.Jobs[0], router.EventRankLost); ev.Rank != 0 {
		t.Fatalf("rank lost event %+v", ev)
	}
	if ev := waitEvent(t, bad.Jobs[0], router.EventFailed); !errors.Is(ev.Err, router.ErrFailed) {
		t.Fatalf("failed event %+v", ev)
	}
	noErrors(t, <-done)
}
