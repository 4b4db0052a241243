package mpi

import (
	"bufio"
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/mpi/internal/proto"
)

// A receive posted while its message is arriving (some fragments in a
// buffer of the message's own, the rest still to come) gets the whole
// message, and the rest of it goes straight into the receive's buffer.
// Fragments are written one at a time through a pipe, the receive posted
// once the reader has handled the second.
func TestRecvPostedMidMessage(t *testing.T) {
	s := testSession(3)
	pr, pw := io.Pipe()
	read := make(chan error, 1)
	go func() { read <- s.readFrames(bufio.NewReader(pr)) }()

	want := make([]byte, 5*s.maxData+7) // six fragments
	for i := range want {
		want[i] = byte(i * 7)
	}
	h := proto.MsgHeader{Dst: 0, Src: 1, Ctx: proto.CtxWorld, Tag: 4, Total: uint64(len(want))}
	send := func(off int) {
		n := min(s.maxData, len(want)-off)
		h.Offset = uint64(off)
		if _, err := pw.Write(append(proto.MsgFrame(&h, n), want[off:off+n]...)); err != nil {
			t.Fatal(err)
		}
	}
	send(0)
	send(s.maxData)
	// A message from rank 2 behind the two fragments: once it is
	// received, the reader has handled both.
	marker := proto.MsgHeader{Dst: 0, Src: 2, Ctx: proto.CtxWorld, Tag: 9, Total: 1}
	if _, err := pw.Write(append(proto.MsgFrame(&marker, 1), 'm')); err != nil {
		t.Fatal(err)
	}
	if _, err := s.world.irecv(proto.CtxWorld, make([]byte, 1), 1, 2, 9).Wait(); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(want))
	r := s.world.irecv(proto.CtxWorld, got, 1, 1, 4)
	s.mu.Lock()
	in := s.partial[1]
	s.mu.Unlock()
	if in == nil || in.direct {
		t.Fatalf("message in flight %+v: want one arriving into its own buffer", in)
	}
	for off := 2 * s.maxData; off < len(want); off += s.maxData {
		send(off)
	}
	done := make(chan struct{})
	var st Status
	var err error
	go func() { st, err = r.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("receive not completed")
	}
	if err != nil || st.Bytes != len(want) || st.Source != 1 || !bytes.Equal(got, want) {
		t.Fatalf("status %+v, err %v, data equal %v", st, err, bytes.Equal(got, want))
	}
	if !in.direct {
		t.Error("the rest of the message did not go straight into the receive's buffer")
	}
	_ = pw.Close()
	if err := <-read; err == nil {
		t.Fatal("reader ended without an error at the end of the stream")
	}
}

// grow doubles a message's own buffer when it must move, never past the
// message's total, and always to at least the length asked.
func TestGrow(t *testing.T) {
	for _, c := range []struct {
		cap, end, total, wantCap int
	}{
		{0, 10, 100, 10},    // from nothing: what is asked
		{10, 11, 100, 20},   // doubles
		{60, 61, 100, 100},  // doubling would pass the total
		{64, 64, 100, 64},   // room enough: stays
		{10, 200, 100, 200}, // past the total (the caller refuses such frames): still what is asked
		{1 << 20, 1<<20 + 1, 32 << 20, 2 << 20},
	} {
		b := grow(make([]byte, 0, c.cap), c.end, c.total)
		if len(b) != c.end || cap(b) < c.wantCap || (c.wantCap >= c.end && cap(b) > c.wantCap+c.wantCap/8) {
			t.Errorf("grow(cap %d, end %d, total %d): len %d cap %d, want len %d cap about %d",
				c.cap, c.end, c.total, len(b), cap(b), c.end, c.wantCap)
		}
	}
}
