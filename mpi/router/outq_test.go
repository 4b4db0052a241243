package router

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/zorilla-p2p/zorilla/mpi/internal/proto"
)

// rankSocket returns the agent's end and the rank's end of a unix socket
// pair, as the router's accept loop would give it; both close when the test
// ends.
func rankSocket(t *testing.T) (agent *net.UnixConn, rank net.Conn) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	conns := make([]net.Conn, 2)
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "socket")
		conns[i], err = net.FileConn(f)
		_ = f.Close()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = conns[i].Close() })
	}
	return conns[0].(*net.UnixConn), conns[1]
}

// queuedMsg delivers a message of n data bytes from rank 1 into q, as a
// local sender's reader would, and returns its frame as sent.
func queuedMsg(t *testing.T, q *outq, n int) proto.Frame {
	t.Helper()
	h := proto.MsgHeader{Src: 1, Dst: 0, Ctx: proto.CtxWorld, Total: uint64(n)}
	f := append(proto.Frame(proto.MsgFrame(&h, n)), bytes.Repeat([]byte{7}, n)...)
	fr := &frame{f: bytes.Clone(f)}
	fr.refs.Store(1)
	if err := q.deliver(context.Background(), fr, &h, n, nil); err != nil {
		t.Fatal(err)
	}
	fr.unref()
	return f
}

// drainRank runs q's writer on the agent's end and returns all the rank
// reads until the writer closes the socket.
func drainRank(t *testing.T, q *outq, agent *net.UnixConn, rank net.Conn) []byte {
	t.Helper()
	wrote := make(chan error, 1)
	go func() { wrote <- q.writeLoop(agent) }()
	got, err := io.ReadAll(rank)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	return got
}

var abortFrame = proto.Fail{Cause: proto.CauseAborted, Rank: 2, Code: 3, Reason: "rank 2 called Abort(3)"}.Encode()

// TestCloseKeepsStart: the job fails while a rank's Start still waits in
// its queue (its writer has not run yet). The agent released the rank
// before the failure, and the rank must see it so: it reads Start, then
// the failure. The message queued between them is dropped.
func TestCloseKeepsStart(t *testing.T) {
	agent, rank := rankSocket(t)
	q := newOutq(1 << 20)
	start := proto.NewFrame(proto.TypeStart, 0)
	q.control(start)
	queuedMsg(t, q, 100)
	q.close(abortFrame)
	got := drainRank(t, q, agent, rank)
	if want := append(bytes.Clone(start), abortFrame...); !bytes.Equal(got, want) {
		t.Fatalf("the rank read %x, want Start then the failure (%x)", got, want)
	}
}

// TestCloseFinishesBegunFrame: the job fails while a large message is half
// written to a rank's socket (the socket took what fit, the rest waits in
// the queue). The rest goes first, so the rank reads the whole frame and
// then the failure, not the failure's bytes as the end of the message.
func TestCloseFinishesBegunFrame(t *testing.T) {
	agent, rank := rankSocket(t)
	if err := agent.SetWriteBuffer(16 << 10); err != nil {
		t.Fatal(err)
	}
	q := newOutq(4 << 20)
	raw, err := agent.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	q.raw = raw // as the writer sets it when it starts: a sender then writes to the socket itself
	msg := queuedMsg(t, q, 1<<20)
	if len(q.items) != 1 || !q.items[0].begun {
		t.Fatalf("the socket took %d bytes of the %d-byte frame at once: nothing is half written",
			len(msg)-q.bytes, len(msg))
	}
	q.close(abortFrame)
	got := drainRank(t, q, agent, rank)
	if want := append(bytes.Clone(msg), abortFrame...); !bytes.Equal(got, want) {
		t.Fatalf("the rank read %d bytes, want the %d-byte message then the %d-byte failure", len(got), len(msg), len(abortFrame))
	}
}
