package router

import (
	"bytes"
	"context"
	jobproto "github.com/zorilla-p2p/zorilla/job/proto"
	"runtime"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/mpi/internal/proto"
)

// TestSequencer walks fragments through the duplicate filter: one sender,
// then two copies of a replicated sender racing, a copy taking over a
// message another copy left half-way (with fragments cut elsewhere), then a
// broken sender.
func TestSequencer(t *testing.T) {
	frag := func(seq, off, total uint64) *proto.MsgHeader {
		return &proto.MsgHeader{Src: 4, Seq: seq, Offset: off, Total: total}
	}
	steps := []struct {
		name string
		h    *proto.MsgHeader
		n    int
		want verdict
		skip int
	}{
		{"msg 0 whole", frag(0, 0, 3), 3, accept, 0},
		{"msg 1 first half", frag(1, 0, 4), 2, accept, 0},
		{"copy 1 starts msg 1 too", frag(1, 0, 4), 2, duplicate, 0},
		{"msg 1 second half", frag(1, 2, 4), 2, accept, 0},
		{"copy 1 finishes its msg 1", frag(1, 2, 4), 2, duplicate, 0},
		{"copy 1 is first to empty msg 2", frag(2, 0, 0), 0, accept, 0},
		{"copy 0's msg 2 is late", frag(2, 0, 0), 0, duplicate, 0},
		{"copy 0's msg 0 replayed", frag(0, 0, 3), 3, duplicate, 0},
		{"copy 0 sends 3 of msg 3", frag(3, 0, 10), 3, accept, 0},
		{"copy 0 dies; copy 1 resends from 0", frag(3, 0, 10), 2, duplicate, 0},
		{"copy 1's fragment overlaps", frag(3, 2, 10), 4, accept, 1},
		{"copy 1 goes on", frag(3, 6, 10), 4, accept, 0},
		{"msg 5 skips msg 4", frag(5, 0, 1), 1, violation, 0},
		{"msg 4 starts mid-way", frag(4, 1, 2), 1, violation, 0},
		{"msg 4 first part", frag(4, 0, 3), 1, accept, 0},
		{"msg 4 with a gap", frag(4, 2, 3), 1, violation, 0},
	}
	s := sequencer{}
	for _, st := range steps {
		got, skip := s.check(st.h.Src, st.h, st.n)
		if got != st.want || skip != st.skip {
			t.Fatalf("%s: verdict %d skip %d, want %d skip %d", st.name, got, skip, st.want, st.skip)
		}
	}
	if p := *s[4]; p != (position{seq: 4, off: 1}) {
		t.Fatalf("position %+v, want msg 4 at byte 1", p)
	}
}

// TestOrphaned: which ranks lose their last copy when agents or local
// copies are lost, with r = 1 and r = 2 (P2P-MPI's replicas on distinct
// hosts: a host's loss is survivable only when every rank it ran has a copy
// elsewhere).
func TestOrphaned(t *testing.T) {
	a, b, c := peer.ID("a"), peer.ID("b"), peer.ID("c")
	single := [][]peer.ID{{a}, {b}, {a}}
	double := [][]peer.ID{{a, b}, {b, c}, {c, a}}
	cases := []struct {
		name   string
		hosts  [][]peer.ID
		lost   []peer.ID
		copies []Proc
		want   []int
	}{
		{"nothing lost", single, nil, nil, nil},
		{"r=1, host a lost", single, []peer.ID{a}, nil, []int{0, 2}},
		{"r=1, a local copy lost", single, nil, []Proc{{1, 0}}, []int{1}},
		{"r=2, one host lost", double, []peer.ID{b}, nil, nil},
		{"r=2, host b and copy 2/0 lost", double, []peer.ID{b}, []Proc{{2, 0}}, nil},
		{"r=2, hosts a and b lost", double, []peer.ID{a, b}, nil, []int{0}},
	}
	for _, tc := range cases {
		lost := map[peer.ID]bool{}
		for _, p := range tc.lost {
			lost[p] = true
		}
		copies := map[Proc]bool{}
		for _, p := range tc.copies {
			copies[p] = true
		}
		got := orphaned(tc.hosts, lost, copies)
		if len(got) != len(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
			}
		}
	}
}

func TestHostLayout(t *testing.T) {
	a, b := peer.ID("a"), peer.ID("b")
	got := hostLayout([][]peer.ID{{b, a}, {a, b}, {b, a}})
	if len(got) != 3 || got[0] != 0 || got[1] != 1 || got[2] != 0 {
		t.Fatalf("layout %v", got)
	}
	if rs := remotes([][]peer.ID{{b, a}, {a, b}}, a); len(rs) != 1 || rs[0] != b {
		t.Fatalf("remotes %v", rs)
	}
}

func TestSpecValidate(t *testing.T) {
	a, b := peer.ID("a"), peer.ID("b")
	good := JobSpec{ID: "j", Key: "k", Size: 2, Replicas: 1, Table: jobproto.RankTableOf([][]peer.ID{{a}, {b}}, nil), Local: []Proc{{0, 0}}}
	if err := good.validate(a); err != nil {
		t.Fatalf("good spec: %v", err)
	}
	bad := map[string]func(s *JobSpec){
		"no ID":              func(s *JobSpec) { s.ID = "" },
		"size mismatch":      func(s *JobSpec) { s.Size = 3 },
		"no replicas":        func(s *JobSpec) { s.Replicas = 0 },
		"missing host":       func(s *JobSpec) { s.Table = jobproto.RankTableOf([][]peer.ID{{a}, {""}}, nil) },
		"two copies on a":    func(s *JobSpec) { s.Replicas = 2; s.Table = jobproto.RankTableOf([][]peer.ID{{a, a}, {b, a}}, nil) },
		"local not here":     func(s *JobSpec) { s.Local = []Proc{{1, 0}} },
		"local missing":      func(s *JobSpec) { s.Local = nil },
		"local twice":        func(s *JobSpec) { s.Local = []Proc{{0, 0}, {0, 0}} },
		"local out of range": func(s *JobSpec) { s.Local = []Proc{{0, 0}, {7, 0}} },
	}
	for name, mutate := range bad {
		s := good
		mutate(&s)
		if err := s.validate(a); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().validate(); err != nil {
		t.Fatalf("default: %v", err)
	}
	bad := map[string]func(c *Config){
		"mode not owner rw": func(c *Config) { c.SocketMode = 0o066 },
		"mode with type":    func(c *Config) { c.SocketMode = 0o4600 },
		"window too small":  func(c *Config) { c.Window = c.MaxData },
		"no fragment":       func(c *Config) { c.MaxData = 0 },
		"queue too small":   func(c *Config) { c.QueueBytes = 10 },
		"heartbeat":         func(c *Config) { c.HeartbeatTimeout = c.HeartbeatInterval },
		"no pending":        func(c *Config) { c.MaxPending = 0 },
		"socket buffer":     func(c *Config) { c.SocketBuffer = -1 },
		"job buffer":        func(c *Config) { c.JobBuffer = c.Window - 1 },
	}
	for name, mutate := range bad {
		c := DefaultConfig()
		mutate(&c)
		if err := c.validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestLinkWindow: a job's remote agents share JobBuffer, each stream's
// window staying within [two fragments, Window].
func TestLinkWindow(t *testing.T) {
	c := DefaultConfig() // Window 4 MiB, JobBuffer 64 MiB, fragments 512 KiB
	floor := 2 * c.frameMax()
	for _, tc := range []struct {
		remotes, want int
	}{
		{0, c.Window}, // only local ranks: no stream is opened
		{1, c.Window},
		{16, c.Window},
		{17, (64 << 20) / 17},
		{63, (64 << 20) / 63},
		{64, floor}, // 1 MiB a share is below two whole fragments
		{600, floor},
	} {
		if got := c.linkWindow(tc.remotes); got != tc.want {
			t.Errorf("%d remote agents: window %d, want %d", tc.remotes, got, tc.want)
		}
	}
}

// TestFramePoolRecycles checks that a frame's buffer comes back from the
// pool once its last holder lets go, for large fragments and small
// messages alike: forwarding a stream of frames must not allocate (and the
// collector clear) a fresh buffer per frame.
func TestFramePoolRecycles(t *testing.T) {
	if raceOn {
		t.Skip("the race detector's sync.Pool drops a share of what is put back, on purpose: no allocation count holds")
	}
	cfg := DefaultConfig()
	fp := newFramePool(cfg.frameMax())
	for _, data := range []int{600, 8000, 100 << 10, cfg.MaxData} {
		wire := proto.NewFrame(proto.TypeMsg, proto.MsgHeaderLen+data)
		const rounds = 100
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range rounds {
			fr, err := fp.read(bytes.NewReader(wire), cfg.bodyMax())
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(fr.f, wire) {
				t.Fatalf("%d data bytes: read a different frame", data)
			}
			fr.ref() // a second holder, as a queue towards a rank takes
			fr.unref()
			fr.unref()
		}
		runtime.ReadMemStats(&after)
		// a round still allocates its small bookkeeping (the frame, the reader)
		if got := (after.TotalAlloc - before.TotalAlloc) / rounds; got > uint64(len(wire))/2 {
			t.Errorf("%d data bytes: %d bytes allocated per frame: the pool hands out no recycled buffers", data, got)
		}
	}
}

// TestFramePoolClasses checks the size classes: every frame gets a buffer
// of its class, from 512 bytes up to the largest frame.
func TestFramePoolClasses(t *testing.T) {
	fp := newFramePool(131117)
	for _, c := range []struct{ l, class, cap int }{
		{1, -1, 0}, {511, -1, 0}, {512, 0, 512}, {513, 1, 1024}, {1024, 1, 1024},
		{8045, 4, 8192}, {65536, 7, 65536}, {65537, 8, 131072}, {131072, 8, 131072},
		{131073, 9, 131117}, {131117, 9, 131117}, {131118, -1, 0},
	} {
		if got := fp.class(c.l); got != c.class {
			t.Errorf("class(%d) = %d, want %d", c.l, got, c.class)
			continue
		}
		b := fp.get(c.l)
		if len(b) != c.l || (c.class >= 0 && cap(b) != c.cap) {
			t.Errorf("get(%d): len %d cap %d, want cap %d", c.l, len(b), cap(b), c.cap)
		}
	}
	if len(fp.classes) != 10 {
		t.Errorf("%d classes, want 10", len(fp.classes))
	}
}

// TestSendLog walks a log through acknowledgements from two copies of the
// destination, a copy's loss, a backup logging what was acknowledged
// already, and the room a full log waits for.
func TestSendLog(t *testing.T) {
	frag := func(seq, off, n uint64) *frame {
		h := proto.MsgHeader{Dst: 1, Seq: seq, Offset: off, Total: off + n}
		fr := &frame{f: append(proto.MsgFrame(&h, int(n)), make([]byte, n)...)}
		fr.refs.Store(1)
		return fr
	}
	ctx := context.Background()
	l := newSendLog(1<<20, 2)
	frames := []*frame{frag(0, 0, 10), frag(1, 0, 10), frag(1, 10, 10), frag(2, 0, 10)}
	for _, fr := range frames {
		h, _ := proto.DecodeMsgHeader(fr.f.Body(), len(fr.f.Body())-proto.MsgHeaderLen)
		if err := l.add(ctx, 1, h.Seq, h.Offset+10, fr); err != nil {
			t.Fatal(err)
		}
	}
	pending := func(k int) int {
		ps := l.pending(1, k)
		for _, fr := range ps {
			fr.unref()
		}
		return len(ps)
	}
	l.ack(1, 0, position{seq: 1, off: 10})
	if got := pending(0); got != 2 {
		t.Fatalf("copy 0 lacks %d fragments, want 2", got)
	}
	if got := pending(1); got != 4 {
		t.Fatalf("copy 1 lacks %d fragments, want 4", got)
	}
	l.ack(1, 1, position{seq: 2})
	if got := l.size(); got != 2*len(frames[0].f) {
		t.Fatalf("log holds %d bytes, want the two fragments copy 0 lacks", got)
	}
	l.markDead(Proc{Rank: 1, Replica: 0})
	if got := l.size(); got != len(frames[0].f) {
		t.Fatalf("log holds %d bytes after copy 0's loss, want message 2 only", got)
	}
	behind := newSendLog(1<<20, 1) // a backup behind its lead logs what the receivers have
	behind.ack(1, 0, position{seq: 5})
	if err := behind.add(ctx, 1, 0, 10, frag(0, 0, 10)); err != nil || behind.size() != 0 {
		t.Fatalf("an acknowledged fragment stayed in the log (%d bytes, %v)", behind.size(), err)
	}
	full := newSendLog(len(frames[0].f), 1)
	if err := full.add(ctx, 1, 0, 10, frag(0, 0, 10)); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- full.add(ctx, 1, 1, 10, frag(1, 0, 10)) }()
	select {
	case err := <-done:
		t.Fatalf("a full log took a fragment: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	full.ack(1, 0, position{seq: 1})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	full.ack(1, 0, position{seq: 2})
	if err := full.waitEmpty(ctx); err != nil || full.size() != 0 {
		t.Fatalf("log not empty: %d bytes, %v", full.size(), err)
	}
	l.close()
	full.close()
}

// TestRTTBound: a loopback path keeps the configured heartbeat timeout; a
// slow, jittery one stretches the silence allowed.
func TestRTTBound(t *testing.T) {
	var fast rttEstimate
	for range 10 {
		fast.add(200 * time.Microsecond)
	}
	if b := fast.bound(); b > 10*time.Millisecond {
		t.Fatalf("loopback bound %v", b)
	}
	var slow rttEstimate
	for i := range 20 {
		slow.add(time.Duration(300+400*(i%2)) * time.Millisecond)
	}
	if b := slow.bound(); b < 5*time.Second {
		t.Fatalf("jittery 300-700 ms path allows only %v of silence", b)
	}
	var none rttEstimate
	if none.bound() != 0 {
		t.Fatal("no sample, yet a bound")
	}
}
