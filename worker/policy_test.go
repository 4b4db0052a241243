package worker

import (
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/job/proto"
)

// host is a quad-core linux machine with 8 GiB lent, J=2, P=4.
func host() Policy {
	return Policy{MaxJobs: 2, MaxProcs: 4, Cores: 4, Memory: 8 << 30, OS: "linux", Arch: "amd64", Labels: []string{"gpu", "site=nancy"}}
}

func need(n int, req proto.Requirements) proto.Need {
	return proto.Need{Job: "j1", N: n, R: 1, Req: req}
}

// decideCase is one case of TestDecide: policy host() changed by p, its
// usage u, an advert of need from from (alice when empty).
type decideCase struct {
	name   string
	p      func(p *Policy)
	u      Usage
	from   peer.ID
	need   proto.Need
	slots  int    // 0: refused
	cores  int    // cores held when accepted
	reason string // substring of Reason
}

func TestDecide(t *testing.T) {
	const alice, bob = peer.ID("alice"), peer.ID("bob")
	tests := []decideCase{
		{name: "idle host offers min(P, cores, n)", need: need(16, proto.Requirements{}), slots: 4, cores: 4},
		{name: "small job offers n", need: need(3, proto.Requirements{}), slots: 3, cores: 3},
		// P (section 4.1: J=1, P=2 for a dual-core): P bounds the offer.
		{name: "P bounds the offer", p: func(p *Policy) { p.MaxProcs = 2 }, need: need(8, proto.Requirements{}), slots: 2},
		{name: "P=0 offers nothing", p: func(p *Policy) { p.MaxProcs = 0 }, need: need(8, proto.Requirements{}), reason: "no free slot: P=0"},
		// J: applications running or reserved.
		{name: "J reached", u: Usage{Jobs: 2, Cores: 2}, need: need(1, proto.Requirements{}), reason: "busy: 2 of J=2"},
		{name: "J not reached", u: Usage{Jobs: 1, Cores: 1}, need: need(8, proto.Requirements{}), slots: 3},
		{name: "J=0 lends nothing", p: func(p *Policy) { p.MaxJobs = 0 }, need: need(1, proto.Requirements{}), reason: "busy: 0 of J=0"},
		// Free cores.
		{name: "free cores bound the offer", u: Usage{Jobs: 1, Cores: 3}, need: need(8, proto.Requirements{}), slots: 1},
		{name: "no free core", u: Usage{Jobs: 1, Cores: 4}, need: need(8, proto.Requirements{}), reason: "no free slot: P=4, 0 cores free"},
		{name: "min cores met", need: need(1, proto.Requirements{MinCores: 4}), slots: 1, cores: 4},
		{name: "min cores unmet", u: Usage{Jobs: 1, Cores: 1}, need: need(1, proto.Requirements{MinCores: 4}), reason: "requires 4 cores, 3 free"},
		// Memory.
		{name: "memory met", u: Usage{Jobs: 1, Cores: 1, Memory: 6 << 30}, need: need(1, proto.Requirements{MinMemory: 2 << 30}), slots: 1},
		{name: "memory unmet", u: Usage{Jobs: 1, Cores: 1, Memory: 7 << 30}, need: need(1, proto.Requirements{MinMemory: 2 << 30}), reason: "requires 2G of memory, 1G free"},
		// OS, arch, labels.
		{name: "os matches", need: need(1, proto.Requirements{OS: "linux"}), slots: 1},
		{name: "os differs", need: need(1, proto.Requirements{OS: "darwin"}), reason: "requires os=darwin, this host is linux"},
		{name: "arch differs", need: need(1, proto.Requirements{Arch: "arm64"}), reason: "requires arch=arm64"},
		{name: "labels present", need: need(1, proto.Requirements{Labels: []string{"site=nancy", "gpu"}}), slots: 1},
		{name: "label missing", need: need(1, proto.Requirements{Labels: []string{"gpu", "fpga"}}), reason: `requires label "fpga"`},
		// Allow and deny lists.
		{name: "no lists: anyone", from: bob, need: need(1, proto.Requirements{}), slots: 1},
		{name: "denied", p: func(p *Policy) { p.Deny = map[peer.ID]bool{bob: true} }, from: bob, need: need(1, proto.Requirements{}), reason: "is denied"},
		{name: "deny list spares others", p: func(p *Policy) { p.Deny = map[peer.ID]bool{bob: true} }, need: need(1, proto.Requirements{}), slots: 1},
		{name: "allowed", p: func(p *Policy) { p.Allow = map[peer.ID]bool{alice: true} }, need: need(1, proto.Requirements{}), slots: 1},
		{name: "not allowed", p: func(p *Policy) { p.Allow = map[peer.ID]bool{alice: true} }, from: bob, need: need(1, proto.Requirements{}), reason: "not in the allow list"},
		{name: "self passes the allow list", p: func(p *Policy) { p.Allow, p.Self = map[peer.ID]bool{}, bob }, from: bob, need: need(1, proto.Requirements{}), slots: 1},
		{name: "self is still bound by J", p: func(p *Policy) { p.Allow, p.Self = map[peer.ID]bool{}, bob }, u: Usage{Jobs: 2}, from: bob, need: need(1, proto.Requirements{}), reason: "busy"},
		{name: "empty allow list: nobody", p: func(p *Policy) { p.Allow = map[peer.ID]bool{} }, need: need(1, proto.Requirements{}), reason: "not in the allow list"},
		{name: "deny wins over allow", p: func(p *Policy) {
			p.Allow, p.Deny = map[peer.ID]bool{alice: true}, map[peer.ID]bool{alice: true}
		}, need: need(1, proto.Requirements{}), reason: "denied"},
		// Bad adverts are refused, not trusted.
		{name: "n=0", need: need(0, proto.Requirements{}), reason: "bad request"},
		{name: "bad job id", need: proto.Need{Job: "../x", N: 1, R: 1}, reason: "bad request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
	}
}

func (tt decideCase) check(t *testing.T) {
	p := host()
	if tt.p != nil {
		tt.p(&p)
	}
	from := tt.from
	if from == "" {
		from = "alice"
	}
	d := Decide(p, tt.u, from, tt.need)
	if d.Accept != (tt.slots > 0) || d.Slots != tt.slots {
		t.Fatalf("Decide = %+v, want %d slots", d, tt.slots)
	}
	if tt.cores != 0 && d.Cores != tt.cores {
		t.Errorf("holds %d cores, want %d", d.Cores, tt.cores)
	}
	if d.Accept && (d.Cores < d.Slots || d.Memory != tt.need.Req.MinMemory) {
		t.Errorf("accepted with %d cores for %d slots, %d bytes", d.Cores, d.Slots, d.Memory)
	}
	if !strings.Contains(d.Reason, tt.reason) {
		t.Errorf("reason %q, want %q", d.Reason, tt.reason)
	}
}

func TestPolicyValidate(t *testing.T) {
	if err := DefaultPolicy().Validate(); err != nil {
		t.Fatalf("default policy: %v", err)
	}
	if d := DefaultPolicy(); d.MaxJobs != 1 || d.MaxProcs != d.Cores || d.Cores < 1 || d.Memory <= 0 {
		t.Fatalf("default policy %+v", d)
	}
	bad := map[string]func(p *Policy){
		"max-jobs":    func(p *Policy) { p.MaxJobs = -1 },
		"max-procs":   func(p *Policy) { p.MaxProcs = proto.MaxProcs + 1 },
		"cores":       func(p *Policy) { p.Cores = -1 },
		"memory":      func(p *Policy) { p.Memory = -1 },
		"os":          func(p *Policy) { p.OS = "Linux" },
		"label":       func(p *Policy) { p.Labels = []string{"a b"} },
		"swap-policy": func(p *Policy) { p.SwapPolicy = 7 },
	}
	for field, mut := range bad {
		p := host()
		mut(&p)
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: Validate = %v", field, err)
		}
	}
}
