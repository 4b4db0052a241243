package job

import (
	"bufio"
	"context"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/internal/rpc"
	"github.com/zorilla-p2p/zorilla/internal/wire"
)

// reportIn is an event from one host's stream; end marks the stream's end.
type reportIn struct {
	from  peer.ID
	lease string
	ev    Report
	end   error         // non-nil: the stream ended before RepDone
	taken chan struct{} // for RepDone and RepLeaving: closed once the session has taken it
}

// release tells the stream's reader that the session is done with this
// report (taken, or dropped).
func (in reportIn) release() {
	if in.taken != nil {
		close(in.taken)
	}
}

// reportState is what a host attempt's report stream needs of the session:
// the last report the session took (and journaled), or why the job will
// take no more from it. The session writes it; stream readers read it.
type reportState struct {
	seq     uint64
	refused string
}

// reportStates is the session's table of reportState by lease, shared
// with the stream readers.
type reportStates struct {
	mu sync.Mutex
	m  map[string]*reportState
}

// reset starts the table of an attempt: only its leases are welcome.
func (t *reportStates) reset(leases []string, seqs map[string]uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.m = make(map[string]*reportState, len(leases))
	for _, l := range leases {
		t.m[l] = &reportState{seq: seqs[l]}
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
func (t *reportStates) ack(lease string) ReportAck {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.m[lease]
	if st == nil {
		return ReportAck{Refused: "not a host of the job's current attempt"}
	}
	return ReportAck{Seq: st.seq, Refused: st.refused}
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

// handleReports reads one worker's report stream for a job into its
// session, and acknowledges what the session took. The first answer says
// from where the worker is to send (it may be sending again after the
// stream broke, or this agent restarted).
func (s *Submitter) handleReports(ctx context.Context, from peer.ID, st rpc.Stream) {
	br := bufio.NewReader(st)
	_ = st.SetDeadline(time.Now().Add(s.cfg.LostAfter))
	var hello ReportHello
	if err := wire.ReadJSON(br, MaxReplySize, &hello); err != nil {
		_ = st.Reset()
		return
	}
	ss := s.session(hello.Job)
	if s.ctx.Err() != nil {
		_ = st.Reset() // this agent is stopping: the worker tries again later
		return
	}
	if ss == nil || hello.Key != string(ss.key) {
		_ = wire.WriteJSON(st, ReportAck{Refused: "no such job on its submitter (it ended, or the submitter restarted without it)"})
		_ = st.Close()
		return
	}
	ack := ss.reports.ack(hello.Lease)
	if err := wire.WriteJSON(st, ack); err != nil || ack.Refused != "" {
		_ = st.Close()
		return
	}
	acked, unacked := ack.Seq, 0
	deliver := func(e reportIn) bool {
		select {
		case ss.events <- e:
			return true
		case <-ss.ctx.Done():
			return false
		}
	}
	for {
		_ = st.SetDeadline(time.Now().Add(s.cfg.LostAfter))
		var ev Report
		if err := wire.ReadJSON(br, MaxReportSize, &ev); err != nil {
			_ = st.Reset()
			deliver(reportIn{from: from, lease: hello.Lease, end: err})
			return
		}
		in := reportIn{from: from, lease: hello.Lease, ev: ev}
		if ev.Kind == RepHeartbeat {
			in.ev = Report{Kind: RepHeartbeat}
		}
		urgent := ev.Kind == RepDone || ev.Kind == RepLeaving // the worker waits for these
		if urgent {
			in.taken = make(chan struct{})
		}
		if !deliver(in) {
			_ = st.Reset()
			return
		}
		if in.taken != nil {
			select {
			case <-in.taken:
			case <-ss.ctx.Done():
				_ = st.Reset()
				return
			}
		}
		now := ss.reports.ack(hello.Lease)
		unacked += len(ev.Data)
		if now.Refused != "" || ev.Kind == RepHeartbeat || urgent || now.Seq >= acked+ackEvery || unacked >= ackBytes {
			if err := wire.WriteJSON(st, now); err != nil {
				_ = st.Reset()
				return
			}
			acked, unacked = now.Seq, 0
		}
		if now.Refused != "" || ev.Kind == RepDone {
			_ = st.Close()
			return
		}
	}
}
