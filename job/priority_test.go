package job

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/job/proto"
)

// The jobs a resumed job yields to travel in its advert as far as the
// advert's bound allows: a set of the largest IDs always fits beside a
// plain need; beside a need near the bound, the set is cut from the end,
// never the job it was swapped out for.
func TestEncodeYielding(t *testing.T) {
	id := func(i int) ID { return ID(fmt.Sprintf("j%0*d", proto.MaxIDLen-1, i)) }
	var set []ID
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
