package job

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
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
