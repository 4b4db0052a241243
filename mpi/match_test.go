package mpi

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/zorilla-p2p/zorilla/mpi/internal/proto"
)

// TestMatcher walks the matching engine through MPI's rules: a receive takes
// the first matching message in arrival order, wildcards match anything in
// their context, contexts never mix, and posted receives are served in the
// order they were posted.
func TestMatcher(t *testing.T) {
	var m matcher
	msg := func(src, tag int, ctx uint32) *inMsg { return &inMsg{src: src, tag: tag, ctx: ctx} }
	recv := func(src, tag int, ctx uint32) *recvReq { return &recvReq{src: src, tag: tag, ctx: ctx} }

	a, b, c := msg(1, 5, 0), msg(2, 5, 0), msg(1, 6, 0)
	coll := msg(1, 5, 1)
	for _, x := range []*inMsg{a, b, c, coll} {
		if in := m.arrive(x); in.recv != nil {
			t.Fatal("matched with nothing posted")
		}
	}
	a, b, c, coll = m.unexpected[0], m.unexpected[1], m.unexpected[2], m.unexpected[3]
	if got := m.post(recv(1, AnyTag, 0)); got != a {
		t.Fatalf("first from 1: %+v", got)
	}
	if got := m.post(recv(AnySource, 6, 0)); got != c {
		t.Fatalf("tag 6: %+v", got)
	}
	if got := m.peek(AnySource, AnyTag, 1); got != coll {
		t.Fatalf("collective context: %+v", got)
	}
	if got := m.post(recv(AnySource, AnyTag, 0)); got != b {
		t.Fatalf("any: %+v", got)
	}
	r1, r2 := recv(3, 9, 0), recv(AnySource, 9, 0)
	if m.post(r1) != nil || m.post(r2) != nil {
		t.Fatal("matched a message that never came")
	}
	if got := m.arrive(msg(3, 9, 0)); got.recv != r1 || got != &r1.msg {
		t.Fatal("the receive posted first must be served first")
	}
	if got := m.arrive(msg(4, 9, 0)); got.recv != r2 || got.src != 4 {
		t.Fatal("wildcard receive not served")
	}
	p := &probeReq{src: 7, tag: AnyTag, found: make(chan Status, 1)}
	m.probes = append(m.probes, p)
	m.arrive(msg(7, 1, 0))
	if st := <-p.found; st.Source != 7 || st.Tag != 1 || len(m.probes) != 0 {
		t.Fatalf("probe: %+v, %d left", st, len(m.probes))
	}
}

// testSession is a session that reads from a byte stream, for the reader's
// fuzz target, with no connection to write to (see discardConn).
func testSession(size int) *Session {
	return newSession(nil, Options{Rank: 0, Size: size}, 64)
}

// discardConn is one end of a socket pair whose other end, the agent's,
// reads and drops what the session writes (a replicated lead's choices,
// for instance). Both ends close when the test ends.
func discardConn(tb testing.TB) *net.UnixConn {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		tb.Fatal(err)
	}
	near, far := os.NewFile(uintptr(fds[0]), "session"), os.NewFile(uintptr(fds[1]), "agent")
	c, err := net.FileConn(near)
	_ = near.Close()
	if err != nil {
		_ = far.Close()
		tb.Fatal(err)
	}
	drained := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, far) // until the session's end closes
		close(drained)
	}()
	tb.Cleanup(func() {
		_ = c.Close()
		<-drained
		_ = far.Close()
	})
	return c.(*net.UnixConn)
}

// FuzzReader feeds arbitrary bytes to a session's reader as if the agent
// sent them, with receives posted: it must end with an error or at the end
// of the input, never panic, never write outside a receive buffer, and
// whatever it delivered must be consistent with the statuses.
func FuzzReader(f *testing.F) {
	msg := func(h proto.MsgHeader, data string) []byte {
		return append(proto.MsgFrame(&h, len(data)), data...)
	}
	f.Add(msg(proto.MsgHeader{Src: 1, Tag: 2, Total: 3}, "abc"))
	f.Add(append(msg(proto.MsgHeader{Src: 1, Total: 5}, "ab"), msg(proto.MsgHeader{Src: 1, Total: 5, Offset: 2}, "cde")...))
	f.Add(append([]byte(proto.NewFrame(proto.TypeStart, 0)), proto.Fail{Cause: 2, Rank: 1, Code: 3}.Encode()...))
	f.Add(msg(proto.MsgHeader{Src: 9, Total: 1}, "x"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s := testSession(3)
		s.conn = discardConn(t)
		small := make([]byte, 4)
		r := s.world.irecv(proto.CtxWorld, small, 1, AnySource, AnyTag)
		err := s.readFrames(bufio.NewReader(bytes.NewReader(data)))
		s.rerr = err // as readLoop ends: a backup's wildcard receive waits for its lead's choice until then
		close(s.dead)
		if err == nil {
			t.Fatal("reader ended without an error")
		}
		if done, st, rerr := r.Test(); done && rerr == nil && (st.Bytes > len(small) || st.Source >= 3) {
			t.Fatalf("delivered %+v into a 4-byte buffer", st)
		}
	})
}

// TestNoLibp2p: the library a user program links must not pull in libp2p.
func TestNoLibp2p(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/zorilla-p2p/zorilla/mpi").CombinedOutput()
	if err != nil {
		t.Skipf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.Contains(dep, "libp2p") || strings.Contains(dep, "multiformats") {
			t.Errorf("mpi depends on %s", dep)
		}
	}
}
