package submitter

import (
	"sync"
	"time"

	"github.com/zorilla-p2p/zorilla/job/proto"
)

// reportState is what a host attempt's report streams and the session
// share: the last report the session took (and journaled), or why the job
// will take no more from it, which the session writes; and when bytes of
// the host last arrived, and which of its streams is the current one,
// which the streams' readers write.
type reportState struct {
	seq     uint64
	refused string
	heard   time.Time // bytes of the host last arrived, or a stream of it opened
	stream  uint64    // the current stream's number: a new one replaces the old
}

// reportStates is the session's table of reportState by lease, shared
// with the stream readers.
type reportStates struct {
	mu sync.Mutex
	m  map[string]*reportState
}

// reset starts the table of an attempt: only its leases are welcome, and
// their hosts count as heard from now.
func (t *reportStates) reset(leases []string, seqs map[string]uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	t.m = make(map[string]*reportState, len(leases))
	for _, l := range leases {
		t.m[l] = &reportState{seq: seqs[l], heard: now}
	}
}

// took records the last report taken from lease.
func (t *reportStates) took(lease string, seq uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if st := t.m[lease]; st != nil && seq > st.seq {
		st.seq = seq
	}
}

// refuse makes the job refuse lease's reports from now on.
func (t *reportStates) refuse(lease, why string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if st := t.m[lease]; st != nil && st.refused == "" {
		st.refused = why
	}
}

// ack is what to tell lease's worker.
func (t *reportStates) ack(lease string) proto.ReportAck {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ackLocked(lease)
}

func (t *reportStates) ackLocked(lease string) proto.ReportAck {
	st := t.m[lease]
	if st == nil {
		return proto.ReportAck{Refused: "not a host of the job's current attempt"}
	}
	return proto.ReportAck{Seq: st.seq, Refused: st.refused}
}

// open makes a new stream of lease the current one (an older one, if it
// is still open, is being replaced: the worker reopened it) and says what
// to answer its hello.
func (t *reportStates) open(lease string) (uint64, proto.ReportAck) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ack := t.ackLocked(lease)
	st := t.m[lease]
	if st == nil || ack.Refused != "" {
		return 0, ack
	}
	st.stream++
	st.heard = time.Now()
	return st.stream, ack
}

// stamp records that bytes of lease's host arrived, on any of its streams.
func (t *reportStates) stamp(lease string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if st := t.m[lease]; st != nil {
		st.heard = time.Now()
	}
}

// current says whether stream n is lease's current stream.
func (t *reportStates) current(lease string, n uint64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.m[lease]
	return st != nil && st.stream == n
}

// heard is when bytes of each lease's host last arrived.
func (t *reportStates) heard() map[string]time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]time.Time, len(t.m))
	for l, st := range t.m {
		out[l] = st.heard
	}
	return out
}

// ackEvery is how many reports the submitter takes between two
// acknowledgements (besides one per heartbeat), so a worker keeps few.
const ackEvery = 128

// ackBytes is how many bytes of data (file chunks) the submitter takes
// between two acknowledgements: a worker keeps at most 4 MiB unacknowledged
// and then waits, so acknowledging only every ackEvery reports (8 MiB of
// 64 KiB chunks) let output and checkpoint files through at 4 MiB per
// heartbeat (2 MB/s).
const ackBytes = 1 << 20
