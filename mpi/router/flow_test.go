package router_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/mpi"
	"github.com/zorilla-p2p/zorilla/mpi/internal/mpitest"
	"github.com/zorilla-p2p/zorilla/mpi/internal/proto"
	"github.com/zorilla-p2p/zorilla/mpi/router"
)

// TestFlowControl: a fast sender on one agent sends 48 MiB to a rank on
// another agent whose process reads nothing. The receiving agent never
// holds more than one window for it, the sender is held back (its sends
// cannot complete), and once the process reads, everything arrives in
// order and intact. The window is the full one when the job has one remote
// agent, and a share of the job's buffer when it has more.
func TestFlowControl(t *testing.T) {
	cfg := router.DefaultConfig()
	// A small rank socket: with 4 MiB asked (8 MiB given) the socket alone
	// would take most of a window before the agent's queue starts to fill,
	// and the kernel's default differs between machines.
	cfg.SocketBuffer = 64 << 10
	shared := cfg
	shared.JobBuffer = cfg.Window // two remote agents: half a window each
	for _, tc := range []struct {
		name   string
		cfg    router.Config
		agents int // the job has a rank on each; rank 0 sends to rank 1
		window int // the receiving agent's window for the sender
	}{
		{"one remote agent", cfg, 2, cfg.Window},
		{"two remote agents share the job's buffer", shared, 3, cfg.Window / 2},
	} {
		t.Run(tc.name, func(t *testing.T) { flowControl(t, tc.cfg, tc.agents, tc.window) })
	}
}

func flowControl(t *testing.T, cfg router.Config, agents, window int) {
	const msgs, size = 48, 1 << 20
	c := newCluster(t, agents, cfg)
	j, err := c.AddJob(agents, mpitest.RoundRobin(agents))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Remove()
	ctx := ctxFor(t, time.Minute)

	slow := dialRaw(t, j.Opts[1].Socket) // rank 1, on agent 1, by hand
	if f := slow.hello(t, j.Opts[1]); f.Type() != proto.TypeWelcome {
		t.Fatalf("welcome: frame type %d", f.Type())
	}
	finished := make(chan struct{})
	defer close(finished)
	for r := 2; r < agents; r++ {
		go func() { // ranks 2.. only make the job span more agents
			s, err := mpi.InitWith(ctx, j.Opts[r])
			if err != nil {
				return
			}
			select {
			case <-finished:
			case <-ctx.Done():
			}
			_ = s.Finalize()
		}()
	}
	sent := make(chan *mpi.Request, msgs)
	senderErr := make(chan error, 1)
	go func() {
		s, err := mpi.InitWith(ctx, j.Opts[0])
		if err != nil {
			senderErr <- err
			close(sent)
			return
		}
		for i := 0; i < msgs; i++ {
			sent <- mpi.Isend(s.World(), pattern(i, size), 1, 3)
		}
		close(sent)
		senderErr <- nil
	}()
	if err := j.Release(ctx); err != nil {
		t.Fatal(err)
	}

	in := j.Jobs[1]
	waitFor(t, "the receiving agent's queue to fill", func() bool {
		return in.Stats().Queued >= window/2
	})
	var last *mpi.Request
	for r := range sent {
		last = r
	}
	if err := <-senderErr; err != nil {
		t.Fatal(err)
	}
	if done, _, _ := last.Test(); done {
		t.Fatalf("the last of %d MiB was sent to a process that reads nothing", msgs)
	}

	if got := readAll(t, slow, msgs, size); got != nil {
		t.Fatal(got)
	}
	if _, err := last.Wait(); err != nil {
		t.Fatalf("sender: %v", err)
	}
	if peak := in.Stats().PeakQueued; peak > window {
		t.Fatalf("receiving agent held %d bytes for one rank, window %d", peak, window)
	}
	if _, err := slow.Write(proto.NewFrame(proto.TypeFinalize, 0)); err != nil {
		t.Fatal(err)
	}
}

// readAll reads msgs messages of size bytes (after the Start frame) as
// fragments, checking their headers and content.
func readAll(t *testing.T, c *rawConn, msgs, size int) error {
	got := 0
	want := pattern(0, size)
	for seq := 0; seq < msgs; {
		f := c.read(t)
		if f.Type() == proto.TypeStart {
			continue
		}
		if f.Type() != proto.TypeMsg {
			return fmt.Errorf("frame type %d", f.Type())
		}
		body := f.Body()
		h, err := proto.DecodeMsgHeader(body, len(body)-proto.MsgHeaderLen)
		if err != nil {
			return err
		}
		if h.Src != 0 || h.Dst != 1 || h.Tag != 3 || h.Seq != uint64(seq) || h.Offset != uint64(got) || h.Total != uint64(size) {
			return fmt.Errorf("fragment %+v, want message %d at %d", h, seq, got)
		}
		data := body[proto.MsgHeaderLen:]
		if !bytes.Equal(data, want[got:got+len(data)]) {
			return fmt.Errorf("message %d at %d corrupted", seq, got)
		}
		got += len(data)
		if got == size {
			seq, got = seq+1, 0
			want = pattern(seq, size)
		}
	}
	return nil
}

func pattern(i, n int) []byte {
	b := make([]byte, n)
	for k := range b {
		b[k] = byte(i*31 + k*7)
	}
	return b
}

// waitFor polls cond until it holds, failing the test after 30s: a loaded
// CI machine has starved these agents for more than 10s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-tick.C:
		}
	}
}
