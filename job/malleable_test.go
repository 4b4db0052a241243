package job

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

func TestParseProcs(t *testing.T) {
	cases := []struct {
		in     string
		lo, hi int
		err    string
	}{
		{"4", 0, 4, ""},
		{" 2:8 ", 2, 8, ""},
		{"4:4", 0, 4, ""}, // a range of one size is a rigid job
		{"0", 0, 0, ""},   // bounds are Validate's
		{"8:2", 0, 0, "want 1 <= MIN <= MAX"},
		{"0:4", 0, 0, "want 1 <= MIN <= MAX"},
		{"four", 0, 0, "want a whole number or MIN:MAX"},
		{"2:", 0, 0, "want a whole number or MIN:MAX"},
		{"2:8:9", 0, 0, "want a whole number or MIN:MAX"},
	}
	for _, c := range cases {
		lo, hi, err := ParseProcs(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: err %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || lo != c.lo || hi != c.hi {
			t.Errorf("%q: %d:%d %v, want %d:%d", c.in, lo, hi, err, c.lo, c.hi)
		}
	}
}

func TestMalleableDescription(t *testing.T) {
	d := NewDescription("./heat", nil, 8)
	d.MinNodes = 2
	d.SetDefaults()
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	if lo, hi := d.SizeRange(); !d.Malleable() || lo != 2 || hi != 8 || d.ResizeEvery != DefaultResizeEvery || d.FormatProcs() != "2:8" {
		t.Fatalf("%d:%d malleable=%v every=%v %q", lo, hi, d.Malleable(), d.ResizeEvery, d.FormatProcs())
	}
	if n := d.Need("j1"); n.N != 8 || n.Min != 2 || n.Validate() != nil {
		t.Fatalf("need %+v: %v", n, n.Validate())
	}
	b, err := json.Marshal(d)
	if err != nil || !strings.Contains(string(b), `"nodes":"2:8"`) || !strings.Contains(string(b), `"resize_every":"30s"`) {
		t.Fatalf("%s %v", b, err)
	}
	var back Description
	if err := json.Unmarshal(b, &back); err != nil || back.MinNodes != 2 || back.Nodes != 8 || back.ResizeEvery != 30*time.Second {
		t.Fatalf("%+v %v", back, err)
	}
	rigid := NewDescription("./heat", nil, 4)
	if rigid.Malleable() || rigid.Need("j1").Min != 0 || rigid.FormatProcs() != "4" {
		t.Fatalf("rigid %+v", rigid)
	}
}

func TestMalleableRefused(t *testing.T) {
	cases := []struct {
		name string
		edit func(d *Description)
		err  string
	}{
		{"replicated", func(d *Description) { d.Replicas = 2 }, "replicated job does not take"},
		{"mpich", func(d *Description) { d.PMI = true }, "MPICH (--pmi) job"},
		{"min above max", func(d *Description) { d.MinNodes = 9 }, "min_nodes: must be <= 8"},
		{"resize too often", func(d *Description) { d.ResizeEvery = time.Millisecond }, "resize_every: must be between 1s"},
	}
	for _, c := range cases {
		d := NewDescription("./heat", nil, 8)
		d.MinNodes = 2
		d.SetDefaults()
		c.edit(&d)
		if err := d.Validate(); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: %v, want %q", c.name, err, c.err)
		}
	}
}

func TestMalleableJobFile(t *testing.T) {
	for _, src := range []string{
		"executable: heat\nnodes: 2:8\nresize_every: 1m\n",
		`{"executable": "heat", "nodes": "2:8", "resize_every": "1m"}`,
	} {
		d, err := DecodeDescription([]byte(src))
		if err != nil || d.MinNodes != 2 || d.Nodes != 8 || d.ResizeEvery != time.Minute {
			t.Errorf("%s: %+v %v", src, d, err)
		}
	}
	for _, src := range []string{"executable: heat\nnodes: \"4\"\n", `{"executable": "heat", "nodes": "4"}`, "executable: heat\nnodes: 8:2\n"} {
		if _, err := DecodeDescription([]byte(src)); err == nil {
			t.Errorf("%s: accepted", src)
		}
	}
}

func TestAppendResizeKeepsTheNewest(t *testing.T) {
	var rs []Resize
	for i := range MaxResizes + 5 {
		rs = AppendResize(rs, Resize{From: i, To: i + 1, Why: strings.Repeat("x", MaxReasonLen+10)})
	}
	if len(rs) != MaxResizes || rs[0].From != 5 || len(rs[0].Why) != MaxReasonLen {
		t.Fatalf("%d resizes, first from %d", len(rs), rs[0].From)
	}
}

func TestPlaceRange(t *testing.T) {
	cases := []struct {
		name   string
		offers []Offer
		lo, hi int
		s      Strategy
		want   string
		err    bool
	}{
		{"all it can hold", hosts("A:1", "B:1", "C:1"), 2, 8, Spread, "A:0.0 B:1.0 C:2.0", false},
		{"no more than hi", hosts("A:4", "B:4"), 2, 6, Concentrate, "A:0.0,1.0,2.0,3.0 B:4.0,5.0", false},
		{"at lo", hosts("A:1", "B:1"), 2, 8, Spread, "A:0.0 B:1.0", false},
		{"below lo", hosts("A:1"), 2, 8, Spread, "", true},
		{"rigid", hosts("A:2", "B:2"), 3, 3, Concentrate, "A:0.0,1.0 B:2.0", false},
	}
	for _, c := range cases {
		p, err := PlaceRange(c.s, c.offers, c.lo, c.hi)
		if c.err {
			if err == nil {
				t.Errorf("%s: placed %v", c.name, p)
			}
			continue
		}
		if got, _ := layout(p); err != nil || got != c.want || p.N != strings.Count(c.want, ".") {
			t.Errorf("%s: %s (n=%d) %v, want %s", c.name, got, p.N, err, c.want)
		}
	}
}

// TestGiveWayTarget: the jobs waiting for a malleable job's slots share
// them in equal parts, none below its least size, none above its largest.
func TestGiveWayTarget(t *testing.T) {
	cases := []struct {
		name    string
		now, lo int
		waiting []Waiter
		want    int
	}{
		{"a rigid job of 2 on 4 slots", 4, 2, []Waiter{{N: 2}}, 2},
		{"a rigid job of 2 on 8 slots: it needs only 2", 8, 2, []Waiter{{N: 2}}, 6},
		{"a malleable 2:8 on 8 slots: equal parts", 8, 2, []Waiter{{N: 8, Min: 2}}, 4},
		{"a malleable 1:2 on 8 slots: its largest", 8, 1, []Waiter{{N: 2, Min: 1}}, 6},
		{"a rigid job larger than an equal part waits", 8, 2, []Waiter{{N: 6}}, 8},
		{"never below lo", 4, 3, []Waiter{{N: 2}}, 3},
		{"at lo already", 2, 2, []Waiter{{N: 2}}, 2},
		{"two waiting: thirds", 9, 1, []Waiter{{N: 9, Min: 1}, {N: 3}}, 3},
		{"nobody", 8, 2, nil, 8},
	}
	for _, c := range cases {
		if got := GiveWayTarget(c.now, c.lo, c.waiting); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

// TestShrinkOnLoss: a malleable job that lost a host restarts at once on
// the hosts left when they hold its least size, from a quiet checkpoint
// at any size, from a loud one only at that checkpoint's size; a rigid
// job restarts elsewhere.
func TestShrinkOnLoss(t *testing.T) {
	plan, err := PlaceRange(Spread, hosts("A:1", "B:1", "C:1", "D:1"), 2, 4)
	if err != nil {
		t.Fatal(err)
	}
	malleable := func(lo int, quiet bool) Record {
		r := recordAt(t, plan, Reserving, Starting, Running)
		r.Desc.MinNodes, r.Desc.ResizeEvery = lo, DefaultResizeEvery
		r.Checkpoints = []Checkpoint{{Num: 3, Complete: true, Size: 4, Files: []CheckpointFile{{Rank: 0, Quiet: quiet}}}}
		return r
	}
	rp := DefaultRetryPolicy()
	lost := Failure{Kind: HostLost, Hosts: []peer.ID{"B"}}
	rec := Recover(malleable(2, true), lost, rp)
	if got, _ := layout(rec.Plan); rec.Action != Shrink || rec.State != Starting || got != "A:0.0 C:1.0 D:2.0" {
		t.Fatalf("quiet: %+v, plan %s", rec, got)
	}
	if rec := Recover(malleable(2, false), lost, rp); rec.Action != Rematch || !rec.Restart {
		t.Fatalf("loud checkpoint: %+v", rec)
	}
	if rec := Recover(malleable(4, true), lost, rp); rec.Action != Rematch {
		t.Fatalf("below its least size: %+v", rec)
	}
	rigid := recordAt(t, plan, Reserving, Starting, Running)
	if rec := Recover(rigid, lost, rp); rec.Action != Rematch {
		t.Fatalf("rigid: %+v", rec)
	}
}
