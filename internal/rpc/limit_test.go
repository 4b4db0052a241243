package rpc

import (
	"context"
	"testing"
	"time"

	mocknet "github.com/libp2p/go-libp2p/p2p/net/mock"

	"github.com/zorilla-p2p/zorilla/internal/ratelimit"
)

// TestLimitRefusesOverRateAndCounts: with a burst of 3 and a rate far too
// slow to refill during the test, the fourth call from a peer is refused
// and counted, another peer still gets through, and calls to self are
// never limited.
func TestLimitRefusesOverRateAndCounts(t *testing.T) {
	mn, err := mocknet.FullMeshConnected(3)
	if err != nil {
		t.Fatal(err)
	}
	defer mn.Close()
	a, b, c := New(mn.Hosts()[0]), New(mn.Hosts()[1]), New(mn.Hosts()[2])
	for _, e := range []*Endpoint{a, b, c} {
		defer e.Close()
	}
	a.Handle(echoProto, echo)
	if err := a.Limit(echoProto, "echo", ratelimit.Limit{Rate: 1e-6, Burst: 3}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	call := func(from *Endpoint) error {
		var got msg
		return from.Call(ctx, a.Self(), echoProto, msg{Text: "x"}, &got, 1024)
	}
	for i := range 3 {
		if err := call(b); err != nil {
			t.Fatalf("call %d within the burst: %v", i, err)
		}
	}
	if err := call(b); err == nil {
		t.Fatal("fourth call over the limit was served")
	}
	if err := call(c); err != nil {
		t.Fatalf("another peer is limited by b's bucket: %v", err)
	}
	for range 5 {
		if err := call(a); err != nil {
			t.Fatalf("a call to self was limited: %v", err)
		}
	}
	if got := a.Refusals()["echo"]; got != 1 {
		t.Fatalf("refusals %v, want echo=1", a.Refusals())
	}
}

func TestLimitRejectsBadLimit(t *testing.T) {
	mn, err := mocknet.FullMeshConnected(1)
	if err != nil {
		t.Fatal(err)
	}
	defer mn.Close()
	e := New(mn.Hosts()[0])
	defer e.Close()
	if err := e.Limit(echoProto, "echo", ratelimit.Limit{}); err == nil {
		t.Fatal("a zero limit was accepted")
	}
}
