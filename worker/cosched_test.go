package worker

import (
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/job/proto"
)

// Co-scheduling within memory: the advert's per-process memory bounds
// the offer, and the jobs already here are charged the more of what they
// declared and what they use.
func TestDecideMemPerProc(t *testing.T) {
	const G = int64(1) << 30
	per := func(n int, m int64) proto.Need { return proto.Need{Job: "j1", N: n, R: 1, MemPerProc: m} }
	tests := []struct {
		name   string
		u      Usage
		need   proto.Need
		slots  int
		memory int64
		full   bool
		reason string
	}{
		{name: "fits whole", need: per(4, G), slots: 4, memory: 4 * G},
		{name: "memory bounds the offer", u: Usage{Jobs: 1, Cores: 0, Memory: 6 * G}, need: per(4, G), slots: 2, memory: 2 * G},
		{name: "one process does not fit: full, waits", u: Usage{Jobs: 1, Memory: 7*G + 1}, need: per(4, G), full: true, reason: "one process declares 1G of memory"},
		{name: "never fits: not full", need: per(1, 9*G), reason: "8G lent in all"},
		{name: "per-host floor above the sum", need: proto.Need{Job: "j1", N: 2, R: 1, MemPerProc: G, Req: proto.Requirements{MinMemory: 3 * G}}, slots: 2, memory: 3 * G},
		{name: "no declaration holds nothing", need: per(2, 0), slots: 2, memory: 0},
	}
	for _, tt := range tests {
		d := Decide(host(), tt.u, "alice", tt.need)
		if d.Accept != (tt.slots > 0) || d.Slots != tt.slots || d.Accept && d.Memory != tt.memory {
			t.Errorf("%s: %+v, want %d slots holding %d", tt.name, d, tt.slots, tt.memory)
		}
		if !d.Accept && (d.Full != tt.full || !strings.Contains(d.Reason, tt.reason)) {
			t.Errorf("%s: refusal %+v, want full=%v and %q", tt.name, d, tt.full, tt.reason)
		}
	}
}

// Two jobs of 2×1G co-schedule on a host lending 4G with J=3; a third is
// refused while the first two hold their memory, and comes in once a job
// measured below its declaration is not enough, but a release is.
func TestLeasesCoScheduleWithinMemory(t *testing.T) {
	const G = int64(1) << 30
	p := Policy{MaxJobs: 3, MaxProcs: 4, Cores: 8, Memory: 4 * G, OS: "linux", Arch: "amd64"}
	l, _ := newTable(t, p)
	n := func(id proto.JobID) proto.Need { return proto.Need{Job: id, N: 2, R: 1, MemPerProc: G} }
	d1, l1, err := l.Admit("alice", n("ja"), 0)
	if err != nil || !d1.Accept || l1.Memory != 2*G {
		t.Fatalf("first: %+v %+v %v", d1, l1, err)
	}
	d2, _, err := l.Admit("bob", n("jb"), 0)
	if err != nil || !d2.Accept || d2.Slots != 2 {
		t.Fatalf("second: %+v %v", d2, err)
	}
	d3, _, _ := l.Admit("carol", n("jc"), 0)
	if d3.Accept || !d3.Full {
		t.Fatalf("third admitted beyond memory: %+v", d3)
	}
	l.SetUsed("ja", G/2) // uses less than declared: still charged 2G
	if d3, _, _ = l.Admit("carol", n("jc"), 0); d3.Accept {
		t.Fatalf("third admitted on a job's low use: %+v", d3)
	}
	if _, err := l.End(l1.Key); err != nil {
		t.Fatal(err)
	}
	if d3, _, _ = l.Admit("carol", n("jc"), 0); !d3.Accept {
		t.Fatalf("third refused after a release: %+v", d3)
	}
}

// A job using more than it declared is charged what it uses.
func TestLeasesChargeMeasuredUse(t *testing.T) {
	const G = int64(1) << 30
	p := Policy{MaxJobs: 3, MaxProcs: 4, Cores: 8, Memory: 4 * G, OS: "linux", Arch: "amd64"}
	l, _ := newTable(t, p)
	if d, _, _ := l.Admit("alice", proto.Need{Job: "ja", N: 1, R: 1, MemPerProc: G}, 0); !d.Accept {
		t.Fatal(d)
	}
	l.SetUsed("ja", 3*G)
	if u := l.Usage(); u.Memory != 3*G {
		t.Fatalf("usage %+v, want 3G charged", u)
	}
	d, _, _ := l.Admit("bob", proto.Need{Job: "jb", N: 2, R: 1, MemPerProc: G}, 0)
	if !d.Accept || d.Slots != 1 {
		t.Fatalf("second: %+v, want 1 slot (1G left)", d)
	}
	l.SetUsed("nobody", 9*G) // no lease: ignored
	if u := l.Usage(); u.Memory != 4*G {
		t.Fatalf("usage %+v", u)
	}
}

func TestHonouredPriority(t *testing.T) {
	const alice, bob = peer.ID("alice"), peer.ID("bob")
	p := host()
	tests := []struct {
		name     string
		max      int
		caps     map[peer.ID]int
		from     peer.ID
		asked    int
		honoured int
	}{
		{"default cap 0", 0, nil, alice, 50, 0},
		{"below the cap kept", 10, nil, alice, 5, 5},
		{"negative kept", 0, nil, alice, -7, -7},
		{"per-peer cap raises", 0, map[peer.ID]int{alice: 80}, alice, 50, 50},
		{"per-peer cap lowers", 50, map[peer.ID]int{bob: -10}, bob, 20, -10},
		{"others keep the default", 5, map[peer.ID]int{bob: 80}, alice, 50, 5},
	}
	for _, tt := range tests {
		p.MaxPriority, p.PriorityCaps = tt.max, tt.caps
		if got := p.HonouredPriority(tt.from, tt.asked); got != tt.honoured {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.honoured)
		}
	}
	p.MaxPriority = proto.MaxPriority + 1
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "max-priority") {
		t.Errorf("cap above range: %v", err)
	}
	p.MaxPriority, p.PriorityCaps = 0, map[peer.ID]int{bob: proto.MinPriority - 1}
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "priority-cap") {
		t.Errorf("per-peer cap below range: %v", err)
	}
}
