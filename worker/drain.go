package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zorilla-p2p/zorilla/job/proto"
)

// ErrDraining is returned for a commit that reaches a worker that is
// stopping.
var ErrDraining = errors.New("worker: draining, no new job starts here")

// Drain prepares the worker to stop. It takes no new job (adverts go
// unanswered, commits are refused), and every job running here leaves:
// first its submitter is told (so it counts this host's copies lost, or
// starts an unreplicated job again elsewhere), then the job's other agents
// (so the other copies of its ranks take over at once instead of after the
// heartbeat timeout), and only then are its processes killed. Drain
// returns when every job here has ended and cleaned up, or with an error
// when ctx ends first.
func (s *Service) Drain(ctx context.Context, why string) error {
	s.draining.Store(true)
	s.mu.Lock()
	jobs := make([]*running, 0, len(s.jobs))
	for _, r := range s.jobs {
		jobs = append(jobs, r)
	}
	s.mu.Unlock()
	for _, r := range jobs {
		go r.leave(why)
	}
	for i, r := range jobs {
		select {
		case <-r.done:
		case <-ctx.Done():
			return fmt.Errorf("drain: %d of %d jobs still ending: %w", len(jobs)-i, len(jobs), ctx.Err())
		}
	}
	return nil
}

// resume makes the job's report stream, if it is reopening, try at once:
// its submitter restarted and asked.
func (r *running) resume() {
	r.mu.Lock()
	k := r.sink
	r.mu.Unlock()
	if k != nil {
		k.resume()
	}
}

// leaveTellWait bounds how long a draining job waits for its submitter to
// acknowledge that this host leaves.
const leaveTellWait = 5 * time.Second

// leave takes the job out of this host, in the order Drain gives.
func (r *running) leave(why string) {
	r.mu.Lock()
	k, m := r.sink, r.mpi
	r.mu.Unlock()
	if k != nil {
		// The submitter must hear it before the processes end: their ends
		// would read as failures of their own.
		ctx, cancel := context.WithTimeout(r.ctx, leaveTellWait)
		k.sendAcked(ctx, proto.Report{Kind: proto.RepLeaving, Reason: why})
		cancel()
	}
	if m != nil {
		m.Leave(why)
	}
	r.kill("agent draining: " + why)
}
