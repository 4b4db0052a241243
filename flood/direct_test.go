package flood

import (
	"context"
	"fmt"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"
)

// A direct advert reaches exactly the peers named, with TTL 1: they
// deliver it and forward it to nobody, and a peer that had the advert
// already does not deliver it again.
func TestDirect(t *testing.T) {
	adj := line(5) // 0 - 1 - 2 - 3 - 4
	c := newCluster(t, adj, nil)
	ctx := context.Background()
	a := Advert{Job: "job-direct", Body: []byte("need")}
	if err := c.fl[0].Flood(ctx, a, 1); err != nil { // 1 has it with TTL 1
		t.Fatal(err)
	}
	waitFor(t, "peer 1's delivery", func() bool { return lastTTL(c.rec[1].deliveries(), a.Job) == 1 })
	to := []peer.ID{c.hosts[0].ID(), c.hosts[1].ID(), c.hosts[3].ID()} // itself, a peer that has it, one 3 hops away
	if err := c.fl[0].Direct(ctx, a, to); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "peer 3's delivery", func() bool { return lastTTL(c.rec[3].deliveries(), a.Job) == 1 })
	waitFor(t, "peer 1 to drop its direct copy as stale", func() bool { return c.fl[1].Stats().Stale == 1 })
	if st := c.fl[0].Stats(); st.Direct != 2 {
		t.Fatalf("%d direct adverts counted, want 2 (not to itself)", st.Direct)
	}
	for i, want := range []int{1, 1, 0, 1, 0} { // deliveries: the submitter's own, 1 once, 3 once
		if got := len(c.rec[i].deliveries()); got != want {
			t.Errorf("peer %d: %d deliveries, want %d", i, got, want)
		}
	}
	for _, i := range []int{1, 3} {
		if st := c.fl[i].Stats(); st.Forwarded != 0 {
			t.Errorf("peer %d forwarded a direct advert", i)
		}
	}
	if c.fl[2].Stats().Received != 0 || c.fl[4].Stats().Received != 0 {
		t.Fatal("a direct advert travelled on")
	}
	var many []peer.ID
	for i := range MaxDirect + 1 {
		many = append(many, peer.ID(fmt.Sprint(i)))
	}
	if err := c.fl[0].Direct(ctx, a, many); err == nil {
		t.Fatalf("%d direct peers accepted", len(many))
	}
}
