package proto

import (
	"bufio"
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/internal/wire"
)

func TestNewIDParses(t *testing.T) {
	seen := map[JobID]bool{}
	for i := 0; i < 100; i++ {
		id := NewJobID()
		if len(id) != 26 {
			t.Fatalf("NewID %q has %d characters, want 26", id, len(id))
		}
		if _, err := ParseJobID(string(id)); err != nil {
			t.Fatalf("ParseJobID(NewJobID()): %v", err)
		}
		if seen[id] {
			t.Fatalf("NewID repeated %q", id)
		}
		seen[id] = true
	}
}

func TestParseID(t *testing.T) {
	good := []string{"a", "job-1", "J_2.x", strings.Repeat("z", MaxIDLen)}
	bad := []string{"", ".", "..", "../etc", "a/b", "-n", ".hidden", "a b", "é", "a\x00", strings.Repeat("z", MaxIDLen+1)}
	for _, s := range good {
		if _, err := ParseJobID(s); err != nil {
			t.Errorf("ParseJobID(%q): %v", s, err)
		}
	}
	for _, s := range bad {
		if _, err := ParseJobID(s); err == nil {
			t.Errorf("ParseJobID(%q) accepted", s)
		}
	}
}

func TestFloodKey(t *testing.T) {
	id := JobID("knl4pkpjcpwekrmgbcfslpnnh6")
	for _, c := range []struct {
		match int
		want  string
	}{{0, string(id)}, {1, string(id)}, {2, string(id) + ".2"}, {3, string(id) + ".3"}} {
		got := FloodKey(id, c.match)
		if got != c.want || !IsFloodKeyOf(got, id) {
			t.Errorf("FloodKey(%d) = %q (of the job: %v), want %q", c.match, got, IsFloodKeyOf(got, id), c.want)
		}
	}
	for _, key := range []string{"", "knl4pkpjcpwekrmgbcfslpnnh", "knl4pkpjcpwekrmgbcfslpnnh6.", "knl4pkpjcpwekrmgbcfslpnnh6.1",
		"knl4pkpjcpwekrmgbcfslpnnh6.02", "knl4pkpjcpwekrmgbcfslpnnh6.+3", "knl4pkpjcpwekrmgbcfslpnnh6.x", "knl4pkpjcpwekrmgbcfslpnnh6.2.2",
		"xknl4pkpjcpwekrmgbcfslpnnh6"} {
		if IsFloodKeyOf(key, id) {
			t.Errorf("IsFloodKeyOf(%q) = true", key)
		}
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		err  bool
	}{
		{"0", 0, false},
		{"4096", 4096, false},
		{"2G", 2 << 30, false},
		{"2g", 2 << 30, false},
		{"2GB", 2 << 30, false},
		{"2GiB", 2 << 30, false},
		{"512M", 512 << 20, false},
		{" 1.5G ", 3 << 29, false},
		{"1K", 1024, false},
		{"1T", 1 << 40, false},
		{"1024T", 1 << 50, false},
		{"1025T", 0, true},
		{"", 0, true},
		{"G", 0, true},
		{"-1G", 0, true},
		{"2X", 0, true},
		{"1e9", 0, true},
		{"1..2G", 0, true},
		{"99999999999999999999999999999999", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, err=%v", tt.in, got, err, tt.want, tt.err)
		}
	}
	for _, n := range []int64{0, 1, 1000, 1024, 3 << 29, 2 << 30, 5 << 40} {
		if got, err := ParseSize(FormatSize(n)); err != nil || got != n {
			t.Errorf("round trip %d via %q = %d, %v", n, FormatSize(n), got, err)
		}
	}
}

func FuzzDecodeNeed(f *testing.F) {
	f.Add([]byte(`{"job":"j1","n":4,"r":2,"req":{"os":"linux","min_memory":1024,"labels":["gpu"]}}`))
	f.Add([]byte(`{"job":"../x","n":1,"r":1,"req":{}}`))
	f.Add([]byte(`{"job":"j","n":100000,"r":16,"req":{}}`))
	f.Add([]byte(`{"job":"j","n":1,"r":1,"req":{},"extra":1}`))
	f.Add([]byte(`{"job":"j","n":2,"r":1,"req":{},"mem_per_proc":1048576,"priority":5}`))
	f.Add([]byte(`{"job":"j","n":2,"r":1,"req":{},"priority":-101}`))
	f.Add([]byte(`{"job":"j","n":2,"r":1,"req":{},"swap_slice":60000000000,"yield_to":"j2","yield_with":["j3","j4"]}`))
	f.Add([]byte(`{"job":"j","n":4,"r":1,"req":{},"pmi":true,"spread":true}`))
	f.Add([]byte(`garbage`))
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := DecodeNeed(b)
		if err != nil {
			return
		}
		if err := n.Validate(); err != nil {
			t.Fatalf("decoded an invalid need: %v", err)
		}
		enc, err := EncodeNeed(n)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		back, err := DecodeNeed(enc)
		if err != nil || !reflect.DeepEqual(back, n) {
			t.Fatalf("round trip: %+v, %v", back, err)
		}
	})
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"2G", "1.5GiB", "0", "1024T", ".5k", "9e9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err != nil {
			return
		}
		if n < 0 || n > MaxSize {
			t.Fatalf("ParseSize(%q) = %d out of range", s, n)
		}
		if back, err := ParseSize(FormatSize(n)); err != nil || back != n {
			t.Fatalf("FormatSize(%d) = %q does not parse back: %d %v", n, FormatSize(n), back, err)
		}
	})
}

func FuzzParseID(f *testing.F) {
	for _, s := range []string{"job-1", "..", "a/b", string(NewJobID())} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseJobID(s)
		if err != nil {
			return
		}
		if id == "." || id == ".." || len(id) > MaxIDLen || id[0] == '-' || id[0] == '.' {
			t.Fatalf("ParseID accepted %q", s)
		}
		for _, c := range []byte(id) {
			if c == '/' || c == '\\' || c == 0 {
				t.Fatalf("ParseID accepted %q", s)
			}
		}
	})
}

func TestDecodePreemptMsg(t *testing.T) {
	cases := []struct {
		in, err string
	}{
		{`{"job":"j1","lease":"k","for":"j2","priority":5}`, ""},
		{`{"job":"../x","lease":"k","for":"j2","priority":5}`, "preempt: job"},
		{`{"job":"j1","lease":"","for":"j2","priority":5}`, "preempt: lease"},
		{`{"job":"j1","lease":"` + strings.Repeat("k", 65) + `","for":"j2"}`, "preempt: lease"},
		{`{"job":"j1","lease":"k","for":"","priority":5}`, "preempt: for"},
		{`{"job":"j1","lease":"k","for":"j2","priority":500}`, "priority: must be"},
		{`{"job":"j1","lease":"k","for":"j2","extra":1}`, "unknown field"},
		{`{"job":"j1","lease":"k","for":"j2","priority":0,"with":["j3","j4"]}`, ""},
		{`{"job":"j1","lease":"k","for":"j2","with":["j3",""]}`, "preempt: with: job id"},
		{`{"job":"j1","lease":"k","for":"j2","with":[` + strings.Repeat(`"j3",`, MaxYieldWith) + `"j3"]}`, "preempt: with: 17 jobs"},
		{strings.Repeat(" ", MaxPreemptSize+1), "exceed"},
	}
	for _, c := range cases {
		_, err := DecodePreemptMsg([]byte(c.in))
		if (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Errorf("%.60s: %v, want %q", c.in, err, c.err)
		}
	}
}

func FuzzDecodePreemptMsg(f *testing.F) {
	f.Add([]byte(`{"job":"j1","lease":"k","for":"j2","priority":5}`))
	f.Add([]byte(`{"job":"j1","lease":"k","for":"j2","priority":-101}`))
	f.Add([]byte(`{"job":"j1","lease":"k","for":"j2","with":["j3","j4"]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodePreemptMsg(b)
		if err == nil && m.Validate() != nil {
			t.Fatalf("decoded an invalid message %+v", m)
		}
	})
}

func TestDeclineMsgValidate(t *testing.T) {
	for _, tt := range []struct {
		m  DeclineMsg
		ok bool
	}{
		{DeclineMsg{Job: "j1", Code: DeclineBusy}, true},
		{DeclineMsg{Job: "j1", Code: DeclineMemory, Detail: "mem=8G"}, true},
		{DeclineMsg{Job: "../x", Code: DeclineBusy}, false},
		{DeclineMsg{Job: "j1", Code: "bored"}, false},
		{DeclineMsg{Job: "j1", Code: DeclineRequirement, Detail: strings.Repeat("x", MaxDeclineDetail+1)}, false},
		{DeclineMsg{Job: "j1", Code: DeclineRequirement, Detail: "os=\x1b[2J"}, false},
	} {
		if err := tt.m.Validate(); (err == nil) != tt.ok {
			t.Errorf("%+v: %v", tt.m, err)
		}
	}
}

// FuzzProtocolMessages feeds arbitrary frames to every message the job
// protocols read off the wire (offer, lease, fetch, report), with the size
// limit each is read with: none may panic, and any message accepted can
// be sent again (encodes, and decodes to the same JSON).
func FuzzProtocolMessages(f *testing.F) {
	seed := func(v any) {
		var b bytes.Buffer
		if err := wire.WriteJSON(&b, v); err != nil {
			f.Fatal(err)
		}
		f.Add(b.Bytes())
	}
	seed(OfferMsg{Job: "j1", Lease: "k", Slots: 2, Cores: 2, Memory: 1 << 20, Expires: time.Unix(1e9, 0).UTC()})
	seed(OfferReply{Keep: true})
	seed(LeaseRequest{Op: OpCommit, Job: "j1", Lease: "k", Commit: &Commit{Key: "s", N: 1, R: 1,
		Program: FileRef{Name: "p", Hash: "00", Size: 1}, Procs: []Proc{{}}, RankTable: RankTable{Hosts: []HostRef{{Peer: "p"}}, Ranks: [][]int{{0}}}}})
	seed(LeaseReply{OK: true, Lease: "k2"})
	seed(FetchRequest{Job: "j1", Key: "s", Hash: "00"})
	seed(FetchReply{Size: 9})
	seed(ReportHello{Job: "j1", Key: "s", Lease: "k"})
	seed(ReportAck{Seq: 3})
	seed(Report{Kind: RepOutput, Seq: 1, Stream: "stdout", Data: []byte("hi\n")})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, c := range []struct {
			v     func() any
			limit int
		}{
			{func() any { return new(OfferMsg) }, MaxOfferSize},
			{func() any { return new(OfferReply) }, MaxReplySize},
			{func() any { return new(LeaseRequest) }, MaxLeaseSize},
			{func() any { return new(LeaseReply) }, MaxReplySize},
			{func() any { return new(FetchRequest) }, MaxReplySize},
			{func() any { return new(FetchReply) }, MaxReplySize},
			{func() any { return new(ReportHello) }, MaxReplySize},
			{func() any { return new(ReportAck) }, MaxReplySize},
			{func() any { return new(Report) }, MaxReportSize},
		} {
			v := c.v()
			if err := wire.ReadJSON(bufio.NewReader(bytes.NewReader(b)), c.limit, v); err != nil {
				continue
			}
			var again bytes.Buffer
			if err := wire.WriteJSON(&again, v); err != nil {
				t.Fatalf("%T accepted but cannot be sent: %v", v, err)
			}
			back := c.v()
			if err := wire.ReadJSON(bufio.NewReader(&again), again.Len(), back); err != nil {
				t.Fatalf("%T re-sent does not decode: %v", v, err)
			}
			j1, _ := json.Marshal(v)
			j2, _ := json.Marshal(back)
			if !bytes.Equal(j1, j2) {
				t.Fatalf("%T changed on the way: %s, then %s", v, j1, j2)
			}
		}
	})
}

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
		{"yields to a set", func(n *Need) { n.YieldTo, n.YieldWith = "j2", []JobID{"j3", "j4"} }, ""},
		{"a set without its first", func(n *Need) { n.YieldWith = []JobID{"j3"} }, "yield_with: a set without"},
		{"a set with a bad ID", func(n *Need) { n.YieldTo, n.YieldWith = "j2", []JobID{"j3", "../x"} }, "yield_with: job id"},
		{"a set too large", func(n *Need) { n.YieldTo, n.YieldWith = "j2", make([]JobID, MaxYieldWith+1) }, "yield_with: 17 jobs"},
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

func TestSiteLabel(t *testing.T) {
	long := SiteLabelPrefix + string(make([]byte, MaxLabelLen))
	for _, tc := range []struct {
		labels []string
		want   string
	}{
		{nil, ""},
		{[]string{"gpu"}, ""},
		{[]string{"gpu", "site=nancy", "site=lyon"}, "nancy"},
		{[]string{"site="}, ""},
		{[]string{long, "site=x"}, "x"},
	} {
		if got := SiteLabel(tc.labels); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.labels, got, tc.want)
		}
	}
}
