package proto

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"
)

func TestControlRoundTrip(t *testing.T) {
	hello := Hello{Version: 1, Rank: 3, Size: 9, Replica: 1, Job: "job-1", Key: "s3cret"}
	if got, err := DecodeHello(hello.Encode().Body()); err != nil || got != hello {
		t.Fatalf("hello: %+v %v", got, err)
	}
	wel := Welcome{Version: 1, MaxData: 1 << 17, HostOf: []uint32{0, 0, 1}}
	if got, err := DecodeWelcome(wel.Encode().Body()); err != nil || !reflect.DeepEqual(got, wel) {
		t.Errorf("welcome: %+v, %v", got, err)
	}
	wel.SiteOf = []uint32{0, 0, 1}
	if b := wel.Encode().Body(); len(b) > WelcomeLimit(3) {
		t.Errorf("welcome with sites: %d bytes, limit %d", len(b), WelcomeLimit(3))
	}
	if got, err := DecodeWelcome(wel.Encode().Body()); err != nil || !reflect.DeepEqual(got, wel) {
		t.Fatalf("welcome: %+v %v", got, err)
	}
	fail := Fail{Cause: CauseAborted, Rank: 2, Code: -7, Reason: "boom"}
	if got, err := DecodeFail(fail.Encode().Body()); err != nil || got != fail {
		t.Fatalf("fail: %+v %v", got, err)
	}
	ab := Abort{Code: 42, Reason: "x"}
	if got, err := DecodeAbort(ab.Encode().Body()); err != nil || got != ab {
		t.Fatalf("abort: %+v %v", got, err)
	}
	ref := Refused{Code: RefuseKey, Reason: "wrong key"}
	if got, err := DecodeRefused(ref.Encode().Body()); err != nil || got != ref {
		t.Fatalf("refused: %+v %v", got, err)
	}
	op := Open{Version: 1, Job: "j", Key: "k"}
	if got, err := DecodeOpen(op.Encode().Body()); err != nil || got != op {
		t.Fatalf("open: %+v %v", got, err)
	}
	acc := Accept{Window: 1 << 20, MaxData: 1 << 17}
	if got, err := DecodeAccept(acc.Encode().Body()); err != nil || got != acc {
		t.Fatalf("accept: %+v %v", got, err)
	}
	if v, err := DecodeU32(U32Frame(TypeCredit, 77).Body()); err != nil || v != 77 {
		t.Fatalf("credit: %d %v", v, err)
	}
}

func TestControlRejects(t *testing.T) {
	long := string(bytes.Repeat([]byte("j"), MaxJobLen+1))
	cases := map[string]error{
		"short hello":                   decodeErr(DecodeHello([]byte{1, 0, 0})),
		"long job":                      decodeErr(DecodeHello(Hello{Job: long}.Encode().Body())),
		"trailing hello":                decodeErr(DecodeHello(append(Hello{Job: "a"}.Encode().Body(), 0))),
		"huge welcome":                  decodeErr(DecodeWelcome([]byte{1, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff})),
		"welcome sites for other ranks": decodeErr(DecodeWelcome([]byte{1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0})),
		"welcome sites cut short":       decodeErr(DecodeWelcome([]byte{1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 7})),
		"empty fail":                    decodeErr(DecodeFail(nil)),
		"empty refused":                 decodeErr(DecodeRefused(nil)),
		"short credit":                  decodeErr(DecodeU32([]byte{1, 2})),
	}
	for name, err := range cases {
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: got %v, want ErrMalformed", name, err)
		}
	}
}

func decodeErr[T any](_ T, err error) error { return err }

func TestMsgHeader(t *testing.T) {
	h := MsgHeader{Dst: 1, Src: 2, Ctx: CtxWorldColl, Tag: 5, Seq: 9, Total: 10, Offset: 4}
	f := append(MsgFrame(&h, 6), make([]byte, 6)...)
	typ, n, err := ParseHeader(f, 1<<20)
	if err != nil || typ != TypeMsg || n != MsgHeaderLen+6 {
		t.Fatalf("frame header: %d %d %v", typ, n, err)
	}
	got, err := DecodeMsgHeader(f[HeaderLen:], 6)
	if err != nil || got != h || !got.Last(6) {
		t.Fatalf("msg header: %+v %v", got, err)
	}
	bad := []struct {
		name string
		h    MsgHeader
		n    int
	}{
		{"negative tag", MsgHeader{Tag: -1, Total: 1}, 1},
		{"past the end", MsgHeader{Total: 10, Offset: 8}, 3},
		{"offset past total", MsgHeader{Total: 1, Offset: 2}, 0},
		{"empty fragment", MsgHeader{Total: 5}, 0},
		{"overflow", MsgHeader{Total: 1<<64 - 1, Offset: 1<<64 - 2}, 5},
	}
	for _, c := range bad {
		b := make([]byte, MsgHeaderLen)
		c.h.Put(b)
		if _, err := DecodeMsgHeader(b, c.n); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: got %v", c.name, err)
		}
	}
	if _, err := DecodeMsgHeader(make([]byte, 10), 0); !errors.Is(err, ErrMalformed) {
		t.Errorf("short header: %v", err)
	}
}

func TestReadFrameLimits(t *testing.T) {
	big := NewFrame(TypeMsg, 100)
	if _, err := ReadFrame(bytes.NewReader(big), 99); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversized: %v", err)
	}
	if _, err := ReadFrame(bytes.NewReader([]byte{0, 0, 0, 0, 1}), 99); !errors.Is(err, ErrMalformed) {
		t.Fatalf("zero length: %v", err)
	}
	if _, err := ReadFrame(bytes.NewReader(big[:50]), 100); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("truncated: %v", err)
	}
	if _, err := ReadFrame(bytes.NewReader(nil), 100); err != io.EOF {
		t.Fatalf("empty: %v", err)
	}
	f, err := ReadFrame(bytes.NewReader(big), 100)
	if err != nil || !bytes.Equal(f, big) {
		t.Fatalf("exact limit: %v", err)
	}
}

// FuzzDecode feeds arbitrary bytes to the frame reader and every body
// decoder: none may panic, and whatever decodes must re-encode to a frame
// that decodes to the same value.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(Hello{Version: 1, Job: "j", Key: "k"}.Encode()))
	f.Add([]byte(Welcome{Version: 1, MaxData: 9, HostOf: []uint32{0, 1}}.Encode()))
	f.Add([]byte(Welcome{Version: 1, MaxData: 9, HostOf: []uint32{0, 1}, SiteOf: []uint32{1, 0}}.Encode()))
	f.Add([]byte(Fail{Cause: 1, Rank: -1, Reason: "r"}.Encode()))
	f.Add([]byte(Open{Version: 1, Job: "j"}.Encode()))
	f.Add(append(MsgFrame(&MsgHeader{Total: 3}, 3), 1, 2, 3))
	f.Add([]byte(EncodeAcks([]AckEntry{{Src: 1, Dst: 2, Replica: 1, Seq: 7, Off: 9}})[0]))
	f.Add([]byte(CopyLost{Rank: 3, Replica: 1}.Encode()))
	f.Add([]byte(Role{Replicas: 2, Lead: true}.Encode()))
	f.Add([]byte(EncodeAgentLost("12D3KooW")))
	f.Add([]byte(Decide{Rank: 1, Num: 9, Kind: DecideProbe, Found: true, Src: 3, Tag: -1}.Encode()))
	f.Add([]byte(DecideAck{Rank: 1, Replica: 1, Num: 4}.Encode()))
	f.Add([]byte(SyncAck{Src: 2, Dst: 1, Seq: 5}.Encode()))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 4})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		for {
			fr, err := ReadFrame(r, 4096)
			if err != nil {
				return
			}
			if len(fr.Body()) > 4096 {
				t.Fatalf("frame body %d over the limit", len(fr.Body()))
			}
			checkBody(t, fr)
		}
	})
}

func checkBody(t *testing.T, fr Frame) {
	b := fr.Body()
	if h, err := DecodeHello(b); err == nil && len(h.Job) <= MaxJobLen {
		if g, err := DecodeHello(h.Encode().Body()); err != nil || g != h {
			t.Fatalf("hello re-encode: %+v %v", g, err)
		}
	}
	if w, err := DecodeWelcome(b); err == nil {
		if g, err := DecodeWelcome(w.Encode().Body()); err != nil || !reflect.DeepEqual(g, w) {
			t.Fatalf("welcome re-encode: %+v %v", g, err)
		}
	}
	if m, err := DecodeFail(b); err == nil {
		if g, err := DecodeFail(m.Encode().Body()); err != nil || g != m {
			t.Fatalf("fail re-encode: %+v %v", g, err)
		}
	}
	if a, err := DecodeAck(b); err == nil {
		fs := EncodeAcks(a)
		if len(a) == 0 && len(fs) != 0 || len(fs) > 1 {
			t.Fatalf("ack of %d entries re-encoded to %d frames", len(a), len(fs))
		}
		if len(fs) == 1 {
			if g, err := DecodeAck(fs[0].Body()); err != nil || !reflect.DeepEqual(g, a) {
				t.Fatalf("ack re-encode: %+v %v", g, err)
			}
		}
	}
	if c, err := DecodeCopyLost(b); err == nil {
		if g, err := DecodeCopyLost(c.Encode().Body()); err != nil || g != c {
			t.Fatalf("copy lost re-encode: %+v %v", g, err)
		}
	}
	if m, err := DecodeRole(b); err == nil {
		if g, err := DecodeRole(m.Encode().Body()); err != nil || g != m {
			t.Fatalf("role re-encode: %+v %v", g, err)
		}
	}
	if m, err := DecodeDecide(b); err == nil {
		if g, err := DecodeDecide(m.Encode().Body()); err != nil || g != m {
			t.Fatalf("decide re-encode: %+v %v", g, err)
		}
	}
	if m, err := DecodeDecideAck(b); err == nil {
		if g, err := DecodeDecideAck(m.Encode().Body()); err != nil || g != m {
			t.Fatalf("decide ack re-encode: %+v %v", g, err)
		}
	}
	if m, err := DecodeSyncAck(b); err == nil {
		if g, err := DecodeSyncAck(m.Encode().Body()); err != nil || g != m {
			t.Fatalf("sync ack re-encode: %+v %v", g, err)
		}
	}
	if p, err := DecodeAgentLost(b); err == nil {
		if g, err := DecodeAgentLost(EncodeAgentLost(p).Body()); err != nil || g != p {
			t.Fatalf("agent lost re-encode: %q %v", g, err)
		}
	}
	_, _ = DecodeAbort(b)
	_, _ = DecodeRefused(b)
	_, _ = DecodeOpen(b)
	_, _ = DecodeU32(b)
	_, _ = DecodeAccept(b)
	if len(b) >= MsgHeaderLen {
		if h, err := DecodeMsgHeader(b, len(b)-MsgHeaderLen); err == nil {
			if h.Offset+uint64(len(b)-MsgHeaderLen) > h.Total {
				t.Fatalf("accepted fragment outside its message: %+v", h)
			}
		}
	}
}

func TestAcks(t *testing.T) {
	var entries []AckEntry
	for i := range MaxAckEntries + 3 {
		entries = append(entries, AckEntry{Src: uint32(i), Dst: 2, Replica: 1, Seq: uint64(i) << 33, Off: 1<<40 + uint64(i)})
	}
	frames := EncodeAcks(entries)
	if len(frames) != 2 {
		t.Fatalf("%d entries in %d frames, want 2", len(entries), len(frames))
	}
	var got []AckEntry
	for _, f := range frames {
		if f.Type() != TypeAck || len(f.Body()) > MaxControl {
			t.Fatalf("frame type %d, body %d bytes", f.Type(), len(f.Body()))
		}
		a, err := DecodeAck(f.Body())
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, a...)
	}
	if !reflect.DeepEqual(got, entries) {
		t.Fatal("acks do not round-trip")
	}
	if _, err := DecodeAck(frames[0].Body()[:30]); !errors.Is(err, ErrMalformed) {
		t.Fatalf("truncated ack: %v", err)
	}
	if _, err := DecodeCopyLost([]byte{1, 2, 3}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("short copy lost: %v", err)
	}
}
