package job

import (
	"strings"
	"testing"
	"time"
)

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
