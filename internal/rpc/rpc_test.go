package rpc

import (
	"bufio"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	mocknet "github.com/libp2p/go-libp2p/p2p/net/mock"

	"github.com/zorilla-p2p/zorilla/internal/wire"
)

const echoProto = "/zorilla/test-echo/1.0.0"

type msg struct {
	Text string
	From string
}

func echo(_ context.Context, from peer.ID, s Stream) {
	var m msg
	if err := wire.ReadJSON(bufio.NewReader(s), 1024, &m); err != nil {
		_ = s.Reset()
		return
	}
	m.From = from.String()
	if err := wire.WriteJSON(s, m); err != nil {
		_ = s.Reset()
		return
	}
	_ = s.Close()
}

func TestCallRemoteAndSelf(t *testing.T) {
	mn, err := mocknet.FullMeshConnected(2)
	if err != nil {
		t.Fatal(err)
	}
	defer mn.Close()
	a, b := New(mn.Hosts()[0]), New(mn.Hosts()[1])
	defer a.Close()
	defer b.Close()
	a.Handle(echoProto, echo)
	b.Handle(echoProto, echo)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, to := range []peer.ID{b.Self(), a.Self()} {
		var got msg
		if err := a.Call(ctx, to, echoProto, msg{Text: "hi"}, &got, 1024); err != nil {
			t.Fatalf("call %s: %v", to, err)
		}
		if got.Text != "hi" || got.From != a.Self().String() {
			t.Fatalf("call %s: got %+v, want echo of hi from %s", to, got, a.Self())
		}
	}
}

func TestSelfUnservedProtocol(t *testing.T) {
	mn, err := mocknet.FullMeshConnected(1)
	if err != nil {
		t.Fatal(err)
	}
	defer mn.Close()
	a := New(mn.Hosts()[0])
	defer a.Close()
	var got msg
	if err := a.Call(context.Background(), a.Self(), echoProto, msg{}, &got, 1024); err == nil {
		t.Fatal("call to an unserved protocol on self succeeded")
	}
}

// A handler blocked reading a stream that never sends must end when the
// endpoint closes; Close waits for it, so a hang here fails the test.
func TestCloseEndsBlockedHandlers(t *testing.T) {
	mn, err := mocknet.FullMeshConnected(1)
	if err != nil {
		t.Fatal(err)
	}
	defer mn.Close()
	a := New(mn.Hosts()[0])
	entered := make(chan struct{})
	a.Handle(echoProto, func(ctx context.Context, from peer.ID, s Stream) {
		close(entered)
		_, _ = s.Read(make([]byte, 1))
	})
	s, err := a.Open(context.Background(), a.Self(), echoProto)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	<-entered
	done := make(chan error)
	go func() { done <- a.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end a blocked handler")
	}
	if _, err := a.Open(context.Background(), a.Self(), echoProto); !errors.Is(err, ErrClosed) {
		t.Fatalf("open after close: %v, want ErrClosed", err)
	}
}

// A peer that never answers must not hold a call past its context, even on
// a transport that ignores deadlines (mocknet).
func TestCallEndsWithContext(t *testing.T) {
	mn, err := mocknet.FullMeshConnected(2)
	if err != nil {
		t.Fatal(err)
	}
	defer mn.Close()
	a, b := New(mn.Hosts()[0]), New(mn.Hosts()[1])
	defer a.Close()
	defer b.Close()
	b.Handle(echoProto, func(ctx context.Context, _ peer.ID, s Stream) {
		<-ctx.Done() // read nothing, answer nothing
	})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	var got msg
	done := make(chan error, 1)
	go func() { done <- a.Call(ctx, b.Self(), echoProto, msg{Text: "hi"}, &got, 1024) }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("call to a silent peer succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("call to a silent peer outlived its context")
	}
}
