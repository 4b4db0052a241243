package submitter

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/internal/rpc"
	"github.com/zorilla-p2p/zorilla/internal/wire"
	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/lifecycle"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// errWindow marks a worker that sent more than a report stream's window.
var errWindow = errors.New("job: report stream beyond its window")

// handleReports reads one worker's report stream for a job and hands its
// reports to the session. The first answer says from where the worker is
// to send (it may be sending again after the stream broke, or this agent
// restarted). The stream is read whole as it comes, whatever the session
// is doing: every byte stamps the host as alive, and heartbeats are
// answered here. A pump delivers the rest to the session, which may be
// slow (writing a checkpoint under swap I/O), and acknowledges what it
// took; the worker's window bounds what waits for it.
func (s *Submitter) handleReports(ctx context.Context, from peer.ID, st rpc.Stream) {
	sr := &stampReader{r: st}
	br := bufio.NewReader(sr)
	_ = st.SetReadDeadline(time.Now().Add(s.cfg.LostAfter))
	var hello proto.ReportHello
	if err := wire.ReadJSON(br, proto.MaxReplySize, &hello); err != nil {
		_ = st.Reset()
		return
	}
	ss := s.session(hello.Job)
	if s.ctx.Err() != nil {
		_ = st.Reset() // this agent is stopping: the worker tries again later
		return
	}
	if ss == nil || !ss.key.Equal(job.Key(hello.Key)) {
		_ = wire.WriteJSON(st, proto.ReportAck{Refused: "no such job on its submitter (it ended, or the submitter restarted without it)"})
		_ = st.Close()
		return
	}
	n, ack := ss.reports.open(hello.Lease)
	rs := &reportStream{ss: ss, from: from, lease: hello.Lease, n: n, st: st,
		timeout: s.cfg.LostAfter, queue: make(chan queued, proto.MaxUnackedReports+1)}
	if err := rs.write(func() proto.ReportAck { return ack }); err != nil || ack.Refused != "" {
		_ = st.Close()
		return
	}
	sr.stamp = func() { ss.reports.stamp(hello.Lease) }
	pumped := make(chan struct{})
	go func() {
		defer close(pumped)
		rs.pump(ctx, ack.Seq)
	}()
	err := rs.read(br)
	log.Debugw("report stream ended", "job", ss.id, "host", from, "err", err)
	<-pumped
}

// queued is a report read, or the stream's end (end non-nil).
type queued struct {
	ev  proto.Report
	end error
}

// reportStream is one open report stream: its reader (handleReports'
// goroutine) and its pump share it.
type reportStream struct {
	ss      *session
	from    peer.ID
	lease   string
	n       uint64 // its number among lease's streams
	st      rpc.Stream
	timeout time.Duration
	queue   chan queued  // read, not yet handed to the session; room for the end
	bytes   atomic.Int64 // the data in queue
	wmu     sync.Mutex   // one acknowledgement written at a time
	echo    atomic.Int64 // the At of the last heartbeat read, echoed in every answer
}

// read reads reports until the stream ends: heartbeats are answered at
// once, the rest queued for the pump, then the end. A read waits twice
// LostAfter at most: the watcher judges silence (LostAfter), this only
// ends a stream whose host vanished.
func (rs *reportStream) read(br *bufio.Reader) (err error) {
	defer func() {
		rs.queue <- queued{end: err} // the slot kept for it: never blocks
		close(rs.queue)
	}()
	for {
		_ = rs.st.SetReadDeadline(time.Now().Add(2 * rs.timeout))
		var ev proto.Report
		if err := wire.ReadJSON(br, proto.MaxReportSize, &ev); err != nil {
			_ = rs.st.Reset()
			return err
		}
		if ev.Kind == proto.RepHeartbeat {
			rs.echo.Store(ev.At)
			if err := rs.write(func() proto.ReportAck { return rs.ss.reports.ack(rs.lease) }); err != nil {
				_ = rs.st.Reset()
				return err
			}
			continue
		}
		if err := rs.enqueue(ev); err != nil {
			log.Warnw("report stream reset", "job", rs.ss.id, "host", rs.from, "err", err)
			_ = rs.st.Reset()
			return err
		}
	}
}

// enqueue queues ev for the pump, within the worker's window.
func (rs *reportStream) enqueue(ev proto.Report) error {
	if rs.bytes.Add(int64(len(ev.Data))) >= proto.MaxUnackedBytes+proto.MaxReportSize {
		return fmt.Errorf("%w: more than %d bytes not acknowledged", errWindow, proto.MaxUnackedBytes)
	}
	if len(rs.queue) >= proto.MaxUnackedReports { // one slot stays free for the end
		return fmt.Errorf("%w: more than %d reports not acknowledged", errWindow, proto.MaxUnackedReports)
	}
	rs.queue <- queued{ev: ev}
	return nil
}

// pump hands the queued reports to the session, in order, and
// acknowledges what it took, until the stream's end (which it hands on
// too), RepDone is taken, the job refuses the host, or the session or
// agent ends. A stream replaced by a newer one delivers no more: the
// worker sends its reports again there.
func (rs *reportStream) pump(ctx context.Context, acked uint64) {
	unacked := 0
	for {
		var q queued
		select {
		case e, ok := <-rs.queue:
			if !ok {
				return
			}
			q = e
		case <-rs.ss.ctx.Done():
			_ = rs.st.Reset() // ends the reader
			return
		case <-ctx.Done():
			_ = rs.st.Reset()
			return
		}
		ev := q.ev
		rs.bytes.Add(-int64(len(ev.Data)))
		if !rs.ss.reports.current(rs.lease, rs.n) {
			continue
		}
		if q.end != nil {
			rs.deliver(ctx, item{ev: lifecycle.StreamEnded{From: rs.from, Lease: rs.lease, Why: q.end.Error()}, stream: rs.n})
			return
		}
		in := item{ev: lifecycle.Report{From: rs.from, Lease: rs.lease, Report: ev}, stream: rs.n}
		urgent := ev.Kind == proto.RepDone || ev.Kind == proto.RepLeaving // the worker waits for these
		if urgent {
			in.taken = make(chan struct{})
		}
		if !rs.deliver(ctx, in) {
			_ = rs.st.Reset() // ends the reader
			return
		}
		unacked += len(ev.Data)
		now := rs.ss.reports.ack(rs.lease)
		if now.Refused != "" || urgent || now.Seq >= acked+ackEvery || unacked >= ackBytes {
			if err := rs.write(func() proto.ReportAck { now = rs.ss.reports.ack(rs.lease); return now }); err != nil {
				_ = rs.st.Reset()
				return
			}
			acked, unacked = now.Seq, 0
		}
		if now.Refused != "" || ev.Kind == proto.RepDone {
			_ = rs.st.Close()
			return
		}
	}
}

// deliver hands in to the session and, for a report the worker waits for,
// waits until the session took it; false when the session or the agent
// ended first.
func (rs *reportStream) deliver(ctx context.Context, in item) bool {
	select {
	case rs.ss.inputs <- in:
	case <-rs.ss.ctx.Done():
		return false
	case <-ctx.Done():
		return false
	}
	if in.taken == nil {
		return true
	}
	select {
	case <-in.taken:
		return true
	case <-rs.ss.ctx.Done():
		return false
	case <-ctx.Done():
		return false
	}
}

// write sends the acknowledgement ack returns, made under the lock, so
// that acknowledgements leave in the order of what they acknowledge.
func (rs *reportStream) write(ack func() proto.ReportAck) error {
	rs.wmu.Lock()
	defer rs.wmu.Unlock()
	_ = rs.st.SetWriteDeadline(time.Now().Add(rs.timeout))
	a := ack()
	a.Echo = rs.echo.Load()
	return wire.WriteJSON(rs.st, a)
}

// stampReader calls stamp on every read that brings bytes: whatever they
// are, they prove their sender alive.
type stampReader struct {
	r     io.Reader
	stamp func() // nil until the stream's host is known
}

func (s *stampReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if n > 0 && s.stamp != nil {
		s.stamp()
	}
	return n, err
}
