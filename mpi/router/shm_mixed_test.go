package router_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/mpi"
	"github.com/zorilla-p2p/zorilla/mpi/internal/mpitest"
	"github.com/zorilla-p2p/zorilla/mpi/internal/proto"
)

// TestShmNotAsked: a process that does not ask for shared memory (an older
// binding) gets no rings, and the rank beside it that asked is told to use
// none with it: their messages go through the agent both ways.
func TestShmNotAsked(t *testing.T) {
	c := newCluster(t, 1, mpitest.FastConfig())
	j, err := c.AddJob(2, func(int) int { return 0 })
	if err != nil {
		t.Fatal(err)
	}
	defer j.Remove()
	ctx := ctxFor(t, 20*time.Second)
	old := dialRaw(t, j.Opts[1].Socket)
	if f := old.hello(t, j.Opts[1]); f.Type() != proto.TypeWelcome {
		t.Fatalf("welcome: frame type %d", f.Type())
	}
	errc := make(chan error, 1)
	go func() {
		s, err := mpi.InitWith(ctx, j.Opts[0])
		if err != nil {
			errc <- err
			return
		}
		if err := mpi.Send(s.World(), []byte("through the agent"), 1, 5); err != nil {
			errc <- err
			return
		}
		buf := make([]byte, 10)
		if _, err := mpi.Recv(s.World(), buf, 1, 6); err != nil {
			errc <- err
			return
		}
		if string(buf[:5]) != "reply" {
			errc <- mpi.ErrProtocol
			return
		}
		errc <- s.Finalize()
	}()
	if err := j.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if f := old.read(t); f.Type() != proto.TypeStart { // no SHM, no SHMON
		t.Fatalf("frame type %d before the start", f.Type())
	}
	f := old.read(t)
	if f.Type() != proto.TypeMsg || !bytes.HasSuffix(f.Body(), []byte("through the agent")) {
		t.Fatalf("got frame type %d %q, want the message", f.Type(), f.Body())
	}
	reply := append(proto.MsgFrame(&proto.MsgHeader{Dst: 0, Tag: 6, Total: 5}, 5), "reply"...)
	if _, err := old.Write(reply); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("rank 0: %v", err)
	}
	if _, err := old.Write(proto.NewFrame(proto.TypeFinalize, 0)); err != nil {
		t.Fatal(err)
	}
}
