package node

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/event"
	ma "github.com/multiformats/go-multiaddr"
)

// TestIDShowsAutoNATv2Verdict: what AutoNAT v2 finds of each address of an
// agent joining publicly is what zorilla id shows, and each new verdict
// replaces the last.
func TestIDShowsAutoNATv2Verdict(t *testing.T) {
	cfg := testConfig(shortDir(t))
	// The stand-in public DHT is a port nobody listens on: the agent
	// keeps retrying it, and its host has the NAT parts.
	cfg.Bootstrap = []string{PublicBootstrapWord}
	cfg.PublicBootstrap = []string{"/ip4/127.0.0.1/tcp/1/p2p/12D3KooWLRPJAA5o6Cj9GDcC5AjByEEKjy1k3ZXgtU3K4E3vTnBR"}
	cfg.Open = true
	n := startNode(t, cfg)
	em, err := n.h.EventBus().Emitter(new(event.EvtHostReachableAddrsChanged))
	if err != nil {
		t.Fatal(err)
	}
	defer em.Close()
	c, err := Dial(cfg.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pub := ma.StringCast("/ip4/11.77.0.6/udp/4001/quic-v1")
	priv := ma.StringCast("/ip4/11.77.0.6/tcp/4001")
	for _, tc := range []struct {
		ev                     event.EvtHostReachableAddrsChanged
		reachable, unreachable []string
	}{
		{event.EvtHostReachableAddrsChanged{Unreachable: []ma.Multiaddr{pub, priv}}, nil, []string{pub.String(), priv.String()}},
		{event.EvtHostReachableAddrsChanged{Reachable: []ma.Multiaddr{pub}, Unreachable: []ma.Multiaddr{priv}}, []string{pub.String()}, []string{priv.String()}},
	} {
		if err := em.Emit(tc.ev); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			info, err := c.ID(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if slices.Equal(info.Reachable, tc.reachable) && slices.Equal(info.Unreachable, tc.unreachable) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("id shows reachable %v unreachable %v, want %v %v", info.Reachable, info.Unreachable, tc.reachable, tc.unreachable)
			}
			time.Sleep(10 * time.Millisecond) // polls the condition, with the deadline above
		}
	}
}
