package overlay

import (
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

func TestRendezvousKey(t *testing.T) {
	a, b := RendezvousKey("zorilla"), RendezvousKey("zorilla-lab")
	if a.Equals(b) || !a.Equals(RendezvousKey("zorilla")) {
		t.Fatalf("keys %s and %s: want one per network, the same every time", a, b)
	}
	// The key is part of the wire: agents of different versions must meet.
	if got := a.String(); got != RendezvousKey("zorilla").String() || !strings.HasPrefix(got, "bafkrei") {
		t.Fatalf("key %s: want a CIDv1 of raw sha2-256", got)
	}
}

func TestStartRendezvousRefusesBadConfig(t *testing.T) {
	good := DefaultRendezvousConfig("lab", []peer.AddrInfo{{ID: "x"}})
	for name, mut := range map[string]func(*RendezvousConfig){
		"network":   func(c *RendezvousConfig) { c.Network = "Lab!" },
		"no peers":  func(c *RendezvousConfig) { c.Peers = nil },
		"check":     func(c *RendezvousConfig) { c.Check = 0 },
		"backoff":   func(c *RendezvousConfig) { c.MaxBackoff = time.Millisecond },
		"heal":      func(c *RendezvousConfig) { c.Heal = time.Millisecond },
		"heal rate": func(c *RendezvousConfig) { c.HealRate = 0 },
		"providers": func(c *RendezvousConfig) { c.Providers = 0 },
		"provide":   func(c *RendezvousConfig) { c.Provide = -time.Second },
	} {
		c := good
		mut(&c)
		if r, err := StartRendezvous(nil, nil, c); err == nil || r != nil {
			t.Errorf("%s: started with %+v", name, c)
		}
	}
}

// TestEstimateSmallNetwork: in a network smaller than a DHT bucket the
// DHT has no estimate; an overlay counts itself and the peers it knows.
func TestEstimateSmallNetwork(t *testing.T) {
	c := newCluster(t, 1, 4, time.Millisecond, time.Millisecond, FastConfig())
	waitFor(t, 20*time.Second, "every overlay knows the 3 others", func() bool {
		for _, o := range c.ovs {
			if len(o.Peers()) < 3 {
				return false
			}
		}
		return true
	})
	for i, o := range c.ovs {
		if n, settled := o.Estimate(); n != 4 || settled {
			t.Errorf("overlay %d estimates %d agents (settled %v), want 4 from the peers it knows", i, n, settled)
		}
	}
}
