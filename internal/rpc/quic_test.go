package rpc

import (
	"context"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
)

func quicHost(t *testing.T) host.Host {
	t.Helper()
	h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/udp/0/quic-v1"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// Over QUIC, closing a stream whose peer already closed it reports a
// cancelled stream; a call whose answer arrived must still succeed.
func TestCallOverQUIC(t *testing.T) {
	ha, hb := quicHost(t), quicHost(t)
	a, b := New(ha), New(hb)
	defer a.Close()
	defer b.Close()
	b.Handle(echoProto, echo)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ha.Connect(ctx, peer.AddrInfo{ID: hb.ID(), Addrs: hb.Addrs()}); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		var got msg
		if err := a.Call(ctx, hb.ID(), echoProto, msg{Text: "hi"}, &got, 1024); err != nil {
			t.Fatalf("call %d over QUIC: %v", i, err)
		}
		if got.Text != "hi" {
			t.Fatalf("call %d: got %+v", i, got)
		}
	}
}
