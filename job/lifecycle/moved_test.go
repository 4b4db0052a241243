package lifecycle

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// An agent counts once, with its first reason; one that offers after all
// leaves the declines; the kinds a record keeps are bounded.
func TestDeclineTally(t *testing.T) {
	var d declines
	d.add("a", proto.DeclineMsg{Code: proto.DeclineBusy})
	d.add("a", proto.DeclineMsg{Code: proto.DeclinePolicy})
	d.add("b", proto.DeclineMsg{Code: proto.DeclinePolicy})
	d.add("c", proto.DeclineMsg{Code: proto.DeclinePolicy})
	d.add("e", proto.DeclineMsg{Code: proto.DeclineMemory, Detail: "mem=8G"})
	d.offered("e")
	got := d.counts()
	want := []job.DeclineCount{{Code: proto.DeclinePolicy, Agents: 2}, {Code: proto.DeclineBusy, Agents: 1}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("counts %v, want %v", got, want)
	}
	var many declines
	for i := range 3 * job.MaxDeclineKinds {
		many.add(peer.ID(fmt.Sprint("p", i)), proto.DeclineMsg{Code: proto.DeclineRequirement, Detail: fmt.Sprintf("label=l%d", i)})
	}
	kinds, agents := many.counts(), 0
	for _, c := range kinds {
		agents += c.Agents
	}
	if len(kinds) > job.MaxDeclineKinds || agents != 3*job.MaxDeclineKinds {
		t.Fatalf("%d kinds for %d agents, want at most %d kinds for %d", len(kinds), agents, job.MaxDeclineKinds, 3*job.MaxDeclineKinds)
	}
}

// The jobs a resumed job yields to travel in its advert as far as the
// advert's bound allows: a set of the largest IDs always fits beside a
// plain need; beside a need near the bound, the set is cut from the end,
// never the job it was swapped out for.
func TestEncodeYielding(t *testing.T) {
	id := func(i int) job.ID { return job.ID(fmt.Sprintf("j%0*d", proto.MaxIDLen-1, i)) }
	var set []job.ID
	for i := range proto.MaxYieldWith + 1 {
		set = append(set, id(i))
	}
	n := proto.Need{Job: id(99), N: 4, R: 1, Priority: 3, MemPerProc: 1 << 30, SwapSlice: time.Minute}
	b, err := encodeYielding(n, set)
	if err != nil {
		t.Fatalf("the largest set: %v", err)
	}
	got, err := proto.DecodeNeed(b)
	if err != nil || got.YieldTo != set[0] || !slices.Equal(got.YieldWith, set[1:]) {
		t.Fatalf("decoded %v, %v: want the whole set", got, err)
	}
	for len(n.Req.Labels) < 24 {
		n.Req.Labels = append(n.Req.Labels, strings.Repeat("l", 128))
	}
	b, err = encodeYielding(n, set)
	if err != nil {
		t.Fatalf("a need near the bound: %v", err)
	}
	got, err = proto.DecodeNeed(b)
	if err != nil || got.YieldTo != set[0] || len(got.YieldWith) == 0 || len(got.YieldWith) >= proto.MaxYieldWith ||
		!slices.Equal(got.YieldWith, set[1:1+len(got.YieldWith)]) {
		t.Fatalf("near the bound: decoded %v with %d of the set, %v: want the first and part of the rest", got.YieldTo, len(got.YieldWith), err)
	}
	if b, err := encodeYielding(proto.Need{Job: "j1", N: 1, R: 1}, nil); err != nil || strings.Contains(string(b), "yield") {
		t.Errorf("no set: %s, %v", b, err)
	}
}

func TestLostNotice(t *testing.T) {
	l := job.LostCopy{Rank: 3, Replica: 1, Host: peer.ID("12D3KooWAbCdEfGhx3kQ"), Why: "agent unreachable"}
	want := "rank 3 copy 1 lost on " + job.ShortPeer(l.Host) + " (agent unreachable); 1 copy left"
	if got := lostNotice(l, 1); got != want {
		t.Errorf("notice %q, want %q", got, want)
	}
}
