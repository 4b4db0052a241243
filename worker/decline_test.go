package worker

import (
	"fmt"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/job/proto"
)

// Every refusal a submitter can act on carries a decline code, and the
// detail names the unmet requirement in --require's syntax.
func TestDecideDeclineCodes(t *testing.T) {
	const alice, bob = peer.ID("alice"), peer.ID("bob")
	tests := []struct {
		name   string
		p      func(p *Policy)
		u      Usage
		from   peer.ID
		need   proto.Need
		code   proto.DeclineCode
		detail string
	}{
		{name: "denied", p: func(p *Policy) { p.Deny = map[peer.ID]bool{bob: true} }, from: bob, need: need(1, proto.Requirements{}), code: proto.DeclinePolicy},
		{name: "not allowed", p: func(p *Policy) { p.Allow = map[peer.ID]bool{} }, from: bob, need: need(1, proto.Requirements{}), code: proto.DeclinePolicy},
		{name: "busy", u: Usage{Jobs: 2, Cores: 2}, need: need(1, proto.Requirements{}), code: proto.DeclineBusy},
		{name: "no free slot", u: Usage{Jobs: 1, Cores: 4}, need: need(1, proto.Requirements{}), code: proto.DeclineSlots},
		{name: "os", need: need(1, proto.Requirements{OS: "windows"}), code: proto.DeclineRequirement, detail: "os=windows"},
		{name: "arch", need: need(1, proto.Requirements{Arch: "arm64"}), code: proto.DeclineRequirement, detail: "arch=arm64"},
		{name: "label", need: need(1, proto.Requirements{Labels: []string{"gpu", "fpga"}}), code: proto.DeclineRequirement, detail: "label=fpga"},
		{name: "cores", need: need(1, proto.Requirements{MinCores: 8}), code: proto.DeclineRequirement, detail: "cores=8"},
		{name: "memory never lent", need: need(1, proto.Requirements{MinMemory: 16 << 30}), code: proto.DeclineRequirement, detail: "mem=16G"},
		{name: "memory in use", u: Usage{Jobs: 1, Cores: 1, Memory: 7 << 30}, need: need(1, proto.Requirements{MinMemory: 2 << 30}), code: proto.DeclineMemory, detail: "mem=2G"},
		{name: "bad request is not told", need: need(0, proto.Requirements{}), code: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := host()
			if tt.p != nil {
				tt.p(&p)
			}
			from := tt.from
			if from == "" {
				from = alice
			}
			d := Decide(p, tt.u, from, tt.need)
			if d.Accept || d.Code != tt.code || d.Detail != tt.detail {
				t.Fatalf("Decide = %+v, want a refusal %q %q", d, tt.code, tt.detail)
			}
			if d.Code != "" {
				if err := (proto.DeclineMsg{Job: "j1", Code: d.Code, Detail: d.Detail}).Validate(); err != nil {
					t.Fatalf("the decline it makes does not validate: %v", err)
				}
			}
		})
	}
	if d := Decide(host(), Usage{}, alice, need(1, proto.Requirements{})); !d.Accept || d.Code != "" {
		t.Fatalf("an offer carries no decline code: %+v", d)
	}
}

// A worker tells a job's submitter at most once, and its declines in all
// are bounded by the rate: a flood of adverts cannot make it open a flood
// of streams. The jobs it remembers are bounded too.
func TestDeclinerOncePerJobAndBounded(t *testing.T) {
	d := newDecliner(0, 5) // no refill: exactly the burst
	if !d.claim("j0") {
		t.Fatal("first decline of a job refused")
	}
	if d.claim("j0") {
		t.Fatal("a job was told twice")
	}
	told := 1
	for i := 1; i < 100; i++ {
		if d.claim(fmt.Sprintf("j%d", i)) {
			told++
		}
	}
	if told != 5 {
		t.Fatalf("%d declines with a burst of 5 and no refill", told)
	}
	d = newDecliner(1e9, 1e9)
	for i := range 3 * maxToldJobs {
		if !d.claim(fmt.Sprintf("j%d", i)) {
			t.Fatalf("decline %d refused with no rate bound", i)
		}
	}
	if len(d.told) != maxToldJobs || len(d.order) != maxToldJobs {
		t.Fatalf("remembers %d jobs (%d in order), want %d", len(d.told), len(d.order), maxToldJobs)
	}
}

// Declines are claimed per flood key: a job flooded again (a restart, a
// new match) is told again, once per flood.
func TestDeclinerOncePerFlood(t *testing.T) {
	d := newDecliner(1e9, 1e9)
	first, again := proto.FloodKey("j0", 1), proto.FloodKey("j0", 2)
	if !d.claim(first) || d.claim(first) {
		t.Fatal("the first flood is not told exactly once")
	}
	if !d.claim(again) || d.claim(again) {
		t.Fatal("the job's second flood is not told exactly once")
	}
}
