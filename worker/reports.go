package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/internal/rpc"
	"github.com/zorilla-p2p/zorilla/internal/wire"
	"github.com/zorilla-p2p/zorilla/job"
)

// reportQueue bounds the events waiting for the stream: a process printing
// faster than the submitter reads is slowed down (its pipe fills), never
// buffered without limit.
const reportQueue = 256

// sink owns one job's event stream to its submitter. Its run goroutine is the
// only writer; everything else sends through events.
type sink struct {
	s      rpc.Stream
	events chan job.Report
	lost   chan struct{} // closed when the stream fails: the submitter is gone
	done   chan struct{} // closed when run has returned
}

func newSink(s rpc.Stream) *sink {
	return &sink{s: s, events: make(chan job.Report, reportQueue), lost: make(chan struct{}), done: make(chan struct{})}
}

// send queues e, or reports false when the submitter is lost or ctx ends.
func (k *sink) send(ctx context.Context, e job.Report) bool {
	select {
	case k.events <- e:
		return true
	case <-k.lost:
		return false
	case <-ctx.Done():
		return false
	}
}

// run writes queued events and a heartbeat every beat, until ctx ends or a
// write fails. An event of kind EvDone is the last one: run closes the
// stream after writing it.
func (k *sink) run(ctx context.Context, beat time.Duration) {
	defer close(k.done)
	t := time.NewTicker(beat)
	defer t.Stop()
	for {
		var e job.Report
		select {
		case e = <-k.events:
		case <-t.C:
			e = job.Report{Kind: job.RepHeartbeat}
		case <-ctx.Done():
			_ = k.s.Reset()
			close(k.lost)
			return
		}
		_ = k.s.SetDeadline(time.Now().Add(4 * beat))
		if err := wire.WriteJSON(k.s, e); err != nil {
			log.Debugw("event stream lost", "err", err)
			_ = k.s.Reset()
			close(k.lost)
			return
		}
		if e.Kind == job.RepDone {
			_ = k.s.Close()
			return
		}
	}
}

func openSink(ctx context.Context, ep *rpc.Endpoint, hello job.ReportHello, to peer.ID) (*sink, error) {
	s, err := ep.Open(ctx, to, job.ReportProtocol)
	if err != nil {
		return nil, err
	}
	if err := wire.WriteJSON(s, hello); err != nil {
		_ = s.Reset()
		return nil, fmt.Errorf("event stream hello: %w", err)
	}
	return newSink(s), nil
}
