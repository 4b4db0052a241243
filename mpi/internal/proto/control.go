package proto

import (
	"encoding/binary"
	"fmt"
)

// Limits on the variable parts of control frames.
const (
	MaxJobLen    = 256  // bytes of a job ID
	MaxKeyLen    = 256  // bytes of a job key
	MaxReasonLen = 1024 // bytes of a failure or refusal reason
	// MaxControl bounds every control frame's body except Welcome, which
	// grows with the job size (see WelcomeLimit).
	MaxControl = 2048
)

// Hello is the first frame a process sends on the agent's socket.
type Hello struct {
	Version uint16
	Rank    uint32
	Size    uint32
	Replica uint32
	Job     string
	Key     string
	Flags   uint8 // HelloShm...; sent as a trailing byte only when not zero
}

// Hello flags.
const (
	// HelloShm: the process takes shared-memory rings (Shm, ShmOn) and
	// sends to the peers ShmOn names through them.
	HelloShm uint8 = 1
)

// Encode returns the Hello frame.
func (h Hello) Encode() Frame {
	var w writer
	w.u16(h.Version)
	w.u32(h.Rank)
	w.u32(h.Size)
	w.u32(h.Replica)
	w.str(h.Job)
	w.str(h.Key)
	if h.Flags != 0 {
		w.b = append(w.b, h.Flags)
	}
	return MakeFrame(TypeHello, w.b)
}

// DecodeHello decodes a Hello body.
func DecodeHello(b []byte) (Hello, error) {
	r := reader{b: b}
	h := Hello{Version: r.u16(), Rank: r.u32(), Size: r.u32(), Replica: r.u32()}
	h.Job = r.str(MaxJobLen)
	h.Key = r.str(MaxKeyLen)
	if r.err == nil && len(r.b) == 1 && r.b[0] != 0 { // the optional flags, never sent as 0
		h.Flags = r.b[0]
		r.b = nil
	}
	if err := r.done(); err != nil {
		return Hello{}, fmt.Errorf("hello: %w", err)
	}
	return h, nil
}

// Welcome accepts a Hello. MaxData is the most data bytes a MSG fragment may
// carry; HostOf[rank] numbers the agent running that rank's first copy, so a
// library can tell which ranks share a machine. SiteOf[rank] numbers that
// agent's site; it is empty when the job runs on one site, and then not on
// the wire at all (the body ends after HostOf, as agents before sites sent
// it and libraries before sites expect it).
type Welcome struct {
	Version uint16
	MaxData uint32
	HostOf  []uint32 // one entry per rank
	SiteOf  []uint32 // one entry per rank, or none
}

// WelcomeLimit is the largest Welcome body for a job of size ranks.
func WelcomeLimit(size int) int { return 2 + 4 + 4 + 4*size + 4 + 4*size }

// Encode returns the Welcome frame.
func (m Welcome) Encode() Frame {
	var w writer
	w.u16(m.Version)
	w.u32(m.MaxData)
	w.u32(uint32(len(m.HostOf)))
	for _, h := range m.HostOf {
		w.u32(h)
	}
	if len(m.SiteOf) > 0 {
		w.u32(uint32(len(m.SiteOf)))
		for _, s := range m.SiteOf {
			w.u32(s)
		}
	}
	return MakeFrame(TypeWelcome, w.b)
}

// DecodeWelcome decodes a Welcome body.
func DecodeWelcome(b []byte) (Welcome, error) {
	r := reader{b: b}
	m := Welcome{Version: r.u16(), MaxData: r.u32()}
	n := r.u32()
	if r.err == nil && (n > MaxRanks || int(n)*4 > len(r.b)) {
		return Welcome{}, fmt.Errorf("welcome: %w: %d ranks", ErrMalformed, n)
	}
	m.HostOf = make([]uint32, n)
	for i := range m.HostOf {
		m.HostOf[i] = r.u32()
	}
	if r.err == nil && len(r.b) > 0 {
		if k := r.u32(); r.err == nil && k != n {
			return Welcome{}, fmt.Errorf("welcome: %w: sites for %d ranks, hosts for %d", ErrMalformed, k, n)
		}
		if n > 0 {
			m.SiteOf = make([]uint32, n)
		}
		for i := range m.SiteOf {
			m.SiteOf[i] = r.u32()
		}
	}
	if err := r.done(); err != nil {
		return Welcome{}, fmt.Errorf("welcome: %w", err)
	}
	return m, nil
}

// Failure causes carried by Fail.
const (
	CauseFailed    uint8 = 1 // any other failure (the agent was told to fail the job)
	CauseAborted   uint8 = 2 // a rank called Abort
	CauseRankLost  uint8 = 3 // a rank's process ended without Finalize
	CauseAgentLost uint8 = 4 // an agent running ranks of the job is gone
)

// Fail tells a process (or a peer agent) that the job failed. Rank is the
// rank the failure is about, or -1; Code is the Abort code.
type Fail struct {
	Cause  uint8
	Rank   int32
	Code   int32
	Reason string
}

// Encode returns the Fail frame.
func (f Fail) Encode() Frame {
	w := writer{b: []byte{f.Cause}}
	w.u32(uint32(f.Rank))
	w.u32(uint32(f.Code))
	w.str(clip(f.Reason))
	return MakeFrame(TypeFail, w.b)
}

// DecodeFail decodes a Fail body.
func DecodeFail(b []byte) (Fail, error) {
	r := reader{b: b}
	c := r.take(1)
	f := Fail{Rank: int32(r.u32()), Code: int32(r.u32()), Reason: r.str(MaxReasonLen)}
	if err := r.done(); err != nil {
		return Fail{}, fmt.Errorf("fail: %w", err)
	}
	f.Cause = c[0]
	return f, nil
}

// Abort asks the agent to end the job everywhere.
type Abort struct {
	Code   int32
	Reason string
}

// Encode returns the Abort frame.
func (a Abort) Encode() Frame {
	var w writer
	w.u32(uint32(a.Code))
	w.str(clip(a.Reason))
	return MakeFrame(TypeAbort, w.b)
}

// DecodeAbort decodes an Abort body.
func DecodeAbort(b []byte) (Abort, error) {
	r := reader{b: b}
	a := Abort{Code: int32(r.u32()), Reason: r.str(MaxReasonLen)}
	if err := r.done(); err != nil {
		return Abort{}, fmt.Errorf("abort: %w", err)
	}
	return a, nil
}

// Refusal codes carried by Refused.
const (
	RefuseMalformed uint8 = 1  // the hello/open frame could not be decoded
	RefuseVersion   uint8 = 2  // unsupported protocol version
	RefuseUnknown   uint8 = 3  // no such job here
	RefuseKey       uint8 = 4  // wrong job key
	RefuseMember    uint8 = 5  // rank/replica or peer not part of the job here
	RefuseDuplicate uint8 = 6  // that copy of the rank is already connected
	RefuseEnded     uint8 = 7  // the job has ended here
	RefuseFailed    uint8 = 8  // the job has failed
	RefuseBusy      uint8 = 9  // too many connections being set up
	RefuseFenced    uint8 = 10 // link: the job counted the opening agent lost; it must end the job there
	RefuseGone      uint8 = 11 // link: the accepting agent left the job (it was fenced); count it lost
)

// Refused answers a Hello or Open that is not accepted.
type Refused struct {
	Code   uint8
	Reason string
}

// Encode returns the Refused frame.
func (m Refused) Encode() Frame {
	w := writer{b: []byte{m.Code}}
	w.str(clip(m.Reason))
	return MakeFrame(TypeRefused, w.b)
}

// DecodeRefused decodes a Refused body.
func DecodeRefused(b []byte) (Refused, error) {
	r := reader{b: b}
	c := r.take(1)
	m := Refused{Reason: r.str(MaxReasonLen)}
	if err := r.done(); err != nil {
		return Refused{}, fmt.Errorf("refused: %w", err)
	}
	m.Code = c[0]
	return m, nil
}

// Open is the first frame on a link stream.
type Open struct {
	Version uint16
	Job     string
	Key     string
}

// Encode returns the Open frame.
func (o Open) Encode() Frame {
	var w writer
	w.u16(o.Version)
	w.str(o.Job)
	w.str(o.Key)
	return MakeFrame(TypeOpen, w.b)
}

// DecodeOpen decodes an Open body.
func DecodeOpen(b []byte) (Open, error) {
	r := reader{b: b}
	o := Open{Version: r.u16()}
	o.Job = r.str(MaxJobLen)
	o.Key = r.str(MaxKeyLen)
	if err := r.done(); err != nil {
		return Open{}, fmt.Errorf("open: %w", err)
	}
	return o, nil
}

// Accept answers an Open: the window of bytes the opener may have in flight,
// and the most data bytes per MSG fragment the acceptor reads.
type Accept struct {
	Window  uint32
	MaxData uint32
}

// Encode returns the Accept frame.
func (a Accept) Encode() Frame {
	var w writer
	w.u32(a.Window)
	w.u32(a.MaxData)
	return MakeFrame(TypeAccept, w.b)
}

// DecodeAccept decodes an Accept body.
func DecodeAccept(b []byte) (Accept, error) {
	r := reader{b: b}
	a := Accept{Window: r.u32(), MaxData: r.u32()}
	if err := r.done(); err != nil {
		return Accept{}, fmt.Errorf("accept: %w", err)
	}
	return a, nil
}

// U32Frame returns a frame whose body is one uint32 (Credit).
func U32Frame(typ byte, v uint32) Frame {
	f := NewFrame(typ, 4)
	binary.LittleEndian.PutUint32(f.Body(), v)
	return f
}

// DecodeU32 decodes a body made of one uint32.
func DecodeU32(b []byte) (uint32, error) {
	r := reader{b: b}
	v := r.u32()
	if err := r.done(); err != nil {
		return 0, err
	}
	return v, nil
}

// clip bounds a reason string so that encoding never fails.
func clip(s string) string {
	if len(s) > MaxReasonLen {
		return s[:MaxReasonLen]
	}
	return s
}
