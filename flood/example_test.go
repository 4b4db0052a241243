package flood_test

import (
	"context"
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"
	mocknet "github.com/libp2p/go-libp2p/p2p/net/mock"

	"github.com/zorilla-p2p/zorilla/flood"
)

type neighbours []peer.ID

func (n neighbours) Neighbours() []peer.ID { return n }

// A submitter floods a job to its one neighbour with radius 1; both the
// neighbour and the submitter itself (an agent is a worker too) get it.
func ExampleFlooder_Flood() {
	mn, _ := mocknet.FullMeshLinked(2)
	defer mn.Close()
	a, b := mn.Hosts()[0], mn.Hosts()[1]

	got := make(chan string, 2)
	deliver := func(who string) flood.DeliverFunc {
		return func(_ context.Context, ad flood.Advert) {
			got <- fmt.Sprintf("%s got %s (%s) with TTL %d", who, ad.Job, ad.Body, ad.TTL)
		}
	}
	fa, _ := flood.New(a, neighbours{b.ID()}, deliver("submitter"), flood.DefaultConfig())
	defer fa.Close()
	fb, _ := flood.New(b, neighbours{a.ID()}, deliver("neighbour"), flood.DefaultConfig())
	defer fb.Close()

	if err := fa.Flood(context.Background(), flood.Advert{Job: "job-1", Body: []byte("n=4")}, 1); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(<-got)
	fmt.Println(<-got)
	// Unordered output:
	// submitter got job-1 (n=4) with TTL 1
	// neighbour got job-1 (n=4) with TTL 1
}
