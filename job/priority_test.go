package job

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestNeedPriorityAndMemPerProcBounds(t *testing.T) {
	base := Need{Job: "j1", N: 2, R: 1}
	cases := []struct {
		name    string
		edit    func(*Need)
		wantErr string
	}{
		{"defaults", func(*Need) {}, ""},
		{"priority at max", func(n *Need) { n.Priority = MaxPriority }, ""},
		{"priority at min", func(n *Need) { n.Priority = MinPriority }, ""},
		{"priority above max", func(n *Need) { n.Priority = MaxPriority + 1 }, "priority: must be -100..100, got 101"},
		{"priority below min", func(n *Need) { n.Priority = MinPriority - 1 }, "priority: must be"},
		{"mem per proc", func(n *Need) { n.MemPerProc = 1 << 30 }, ""},
		{"negative mem per proc", func(n *Need) { n.MemPerProc = -1 }, "mem_per_proc: must be 0.."},
		{"huge mem per proc", func(n *Need) { n.MemPerProc = MaxSize + 1 }, "mem_per_proc: must be 0.."},
		{"swap slice", func(n *Need) { n.SwapSlice = 10 * time.Minute }, ""},
		{"swap slice below a second", func(n *Need) { n.SwapSlice = time.Millisecond }, "swap_slice: must be 0"},
		{"yields to a job", func(n *Need) { n.YieldTo = "j2" }, ""},
		{"yields to a bad ID", func(n *Need) { n.YieldTo = "J 2" }, "yield_to:"},
		{"yields to a set", func(n *Need) { n.YieldTo, n.YieldWith = "j2", []ID{"j3", "j4"} }, ""},
		{"a set without its first", func(n *Need) { n.YieldWith = []ID{"j3"} }, "yield_with: a set without"},
		{"a set with a bad ID", func(n *Need) { n.YieldTo, n.YieldWith = "j2", []ID{"j3", "../x"} }, "yield_with: job id"},
		{"a set too large", func(n *Need) { n.YieldTo, n.YieldWith = "j2", make([]ID, MaxYieldWith+1) }, "yield_with: 17 jobs"},
	}
	for _, c := range cases {
		n := base
		c.edit(&n)
		err := n.Validate()
		if (err == nil) != (c.wantErr == "") || err != nil && !strings.Contains(err.Error(), c.wantErr) {
			t.Errorf("%s: Validate = %v, want %q", c.name, err, c.wantErr)
		}
		b, _ := EncodeNeed(n)
		if _, err := DecodeNeed(b); (err == nil) != (c.wantErr == "") {
			t.Errorf("%s: DecodeNeed = %v, want error %v", c.name, err, c.wantErr != "")
		}
	}
}

// The jobs a resumed job yields to travel in its advert as far as the
// advert's bound allows: a set of the largest IDs always fits beside a
// plain need; beside a need near the bound, the set is cut from the end,
// never the job it was swapped out for.
func TestEncodeYielding(t *testing.T) {
	id := func(i int) ID { return ID(fmt.Sprintf("j%0*d", MaxIDLen-1, i)) }
	var set []ID
	for i := range MaxYieldWith + 1 {
		set = append(set, id(i))
	}
	n := Need{Job: id(99), N: 4, R: 1, Priority: 3, MemPerProc: 1 << 30, SwapSlice: time.Minute}
	b, err := encodeYielding(n, set)
	if err != nil {
		t.Fatalf("the largest set: %v", err)
	}
	got, err := DecodeNeed(b)
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
	got, err = DecodeNeed(b)
	if err != nil || got.YieldTo != set[0] || len(got.YieldWith) == 0 || len(got.YieldWith) >= MaxYieldWith ||
		!slices.Equal(got.YieldWith, set[1:1+len(got.YieldWith)]) {
		t.Fatalf("near the bound: decoded %v with %d of the set, %v: want the first and part of the rest", got.YieldTo, len(got.YieldWith), err)
	}
	if b, err := encodeYielding(Need{Job: "j1", N: 1, R: 1}, nil); err != nil || strings.Contains(string(b), "yield") {
		t.Errorf("no set: %s, %v", b, err)
	}
}

func TestHeldMemory(t *testing.T) {
	cases := []struct {
		min, per int64
		slots    int
		want     int64
	}{
		{0, 0, 4, 0},
		{1 << 30, 0, 4, 1 << 30},
		{0, 100, 4, 400},
		{1000, 100, 4, 1000},     // the per-host floor is more
		{0, MaxSize, 2, MaxSize}, // no overflow
		{0, MaxSize / 2, 3, MaxSize},
	}
	for _, c := range cases {
		n := Need{MemPerProc: c.per, Req: Requirements{MinMemory: c.min}}
		if got := HeldMemory(n, c.slots); got != c.want {
			t.Errorf("HeldMemory(min %d, per %d, %d slots) = %d, want %d", c.min, c.per, c.slots, got, c.want)
		}
	}
}

func TestDescriptionCarriesPriorityAndMemPerProc(t *testing.T) {
	d, err := DecodeDescription([]byte("executable: a\nnodes: 2\nmem_per_proc: 1.5G\npriority: 7\n"))
	if err != nil {
		t.Fatal(err)
	}
	if d.MemPerProc != 3<<29 || d.Priority != 7 {
		t.Fatalf("mem_per_proc %d priority %d", d.MemPerProc, d.Priority)
	}
	n := d.Need("j1")
	if n.MemPerProc != d.MemPerProc || n.Priority != 7 {
		t.Fatalf("need %+v", n)
	}
	if _, err := DecodeDescription([]byte("executable: a\nnodes: 2\npriority: 1000\n")); err == nil || !strings.Contains(err.Error(), "priority") {
		t.Fatalf("priority 1000: %v", err)
	}
}

// A job file's swap_slice: absent is the default, 0 is never, and a slice
// shorter than a switch is refused; it travels in the advert's need.
func TestSwapSliceInJobFile(t *testing.T) {
	for _, tt := range []struct {
		line string
		want time.Duration
		err  bool
	}{
		{"", DefaultSwapSlice, false},
		{"swap_slice: 0s\n", 0, false},
		{"swap_slice: 2m\n", 2 * time.Minute, false},
		{"swap_slice: 500ms\n", 0, true},
		{"swap_slice: -1m\n", 0, true},
	} {
		d, err := DecodeDescription([]byte("executable: heat\nnodes: 2\n" + tt.line))
		if (err != nil) != tt.err {
			t.Errorf("%q: error %v, want one: %v", tt.line, err, tt.err)
			continue
		}
		if err != nil {
			continue
		}
		if d.SwapSlice != tt.want || d.Need("j1").SwapSlice != tt.want {
			t.Errorf("%q: slice %v, need's %v; want %v", tt.line, d.SwapSlice, d.Need("j1").SwapSlice, tt.want)
		}
		b, err := d.MarshalJSON()
		var back Description
		if err != nil || back.UnmarshalJSON(b) != nil || back.SwapSlice != tt.want {
			t.Errorf("%q: the record's form gives %v (%v), want %v", tt.line, back.SwapSlice, err, tt.want)
		}
	}
}
