package job_test

import (
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/job"
)

// The paper's example: -n 3 -r 2 on two hosts puts P0..P2 on the closest
// and their copies on the other; the third, farthest offer is cancelled.
func ExamplePlace() {
	rlist := []job.Offer{
		{Peer: peer.ID("far"), Slots: 4, RTT: 12 * time.Millisecond},
		{Peer: peer.ID("near"), Slots: 4, RTT: 1 * time.Millisecond},
		{Peer: peer.ID("mid"), Slots: 4, RTT: 5 * time.Millisecond},
	}
	job.SortRList(rlist)
	plan, err := job.Place(job.Concentrate, rlist, 3, 2)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, h := range plan.Hosts {
		fmt.Println(string(h.Offer.Peer), h.Procs)
	}
	fmt.Println("cancel", string(plan.Spares[0].Peer))

	_, err = job.Place(job.Spread, rlist[:1], 3, 2)
	fmt.Println(err)
	// Output:
	// near [{0 0} {1 0} {2 0}]
	// mid [{0 1} {1 1} {2 1}]
	// cancel far
	// job: infeasible: 1 hosts offered, need at least r=2 distinct hosts for the replicas
}

func ExampleParseRequire() {
	r, err := job.ParseRequire("os=linux,arch=amd64,mem=2G,cores=4,label=gpu")
	fmt.Printf("%+v %v\n", r, err)
	// Output: {OS:linux Arch:amd64 MinCores:4 MinMemory:2147483648 Labels:[gpu]} <nil>
}
