package worker

import (
	"fmt"
	"time"

	"github.com/zorilla-p2p/zorilla/internal/gang"
	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/worker/proc"
)

// gangMember is a running job as the rotation sees it.
type gangMember struct {
	r      *running
	col    int
	procs  []proc.Process
	frozen bool
}

// kickGang asks the rotation to look at the jobs again now: one joined
// (its ranks were released) or left.
func (s *Service) kickGang() {
	select {
	case s.gangKick <- struct{}{}:
	default:
	}
}

// runGang freezes and thaws the jobs sharing this host at each slice
// boundary of ServiceConfig.Gang. It alone changes whether a job is
// frozen. A job joins the rotation once all its processes here have
// started (a program that never calls mpi.Init takes turns too); its Init
// barrier may then wait for its slice, at most one round
// (Columns×Slice), far below the submitter's Init timeout. A job that ends
// leaves the rotation, and Kill thaws a frozen process itself. The agents
// themselves are never frozen, so the MPI routers' heartbeats between
// hosts go on, and a frozen rank is only a rank that reads its socket
// late: nothing in the router or the mpi library times out on that.
func (s *Service) runGang() {
	defer s.wg.Done()
	frozen := map[*running]bool{}
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		case <-s.gangKick:
		}
		now := time.Now()
		s.gangStep(now, frozen)
		t.Reset(time.Until(s.cfg.Gang.NextSwitch(now)))
	}
}

// gangStep applies the rotation's rule at now to the jobs here.
func (s *Service) gangStep(now time.Time, frozen map[*running]bool) {
	members := s.gangMembers(frozen)
	occupied := make([]int, len(members))
	for i, m := range members {
		occupied[i] = m.col
	}
	// Every freeze before any thaw: two jobs never run here at once. Both
	// are asked of every job at every step (a no-op for a process already
	// so): a job continued by preemption's thaw out of its slice is frozen
	// again. A job frozen by preemption is left to it.
	for _, freeze := range []bool{true, false} {
		for _, m := range members {
			want := !s.cfg.Gang.Runnable(now, m.col, occupied)
			if want != freeze {
				continue
			}
			if s.gangSwitch(m, want) && want != m.frozen {
				log.Debugw("time-slice switch", "job", m.r.id, "frozen", want, "column", m.col,
					"late", now.Sub(time.Unix(0, s.cfg.Gang.Slot(now)*int64(s.cfg.Gang.Slice))))
			}
			frozen[m.r] = want
		}
	}
}

// slicedReportEvery bounds how often a host reports a job's time frozen
// by the rotation (RepSliced): a total per interval, not a report per
// slice, plus one when the job ends here.
const slicedReportEvery = 5 * time.Second

// gangSwitch freezes or thaws one job, unless preemption or its fence
// holds it frozen;
// it reports whether it did. The job's frozen time is counted, and its
// total sent to the submitter when due.
func (s *Service) gangSwitch(m gangMember, freeze bool) bool {
	m.r.pre.mu.Lock() // proc's rule: one Freeze or Thaw of a job at a time
	defer m.r.pre.mu.Unlock()
	if m.r.pre.frozen || m.r.pre.fenced {
		return false
	}
	apply, what := proc.Thaw, "thaw"
	if freeze {
		apply, what = proc.Freeze, "freeze"
	}
	now := time.Now()
	if err := apply(m.r.sandbox, m.procs); err != nil {
		log.Warnw("time-slice switch failed", "job", m.r.id, "action", what, "err", err)
	} else if freeze {
		m.r.pre.slices.Freeze(now)
	} else {
		m.r.pre.slices.Thaw(now)
	}
	if total, ok := m.r.pre.slices.Due(now, slicedReportEvery, false); ok {
		m.r.reportSliced(total)
	}
	return true
}

// endSlices closes the job's frozen time here when its processes have
// ended, and sends the total not yet reported.
func (r *running) endSlices() {
	r.pre.mu.Lock()
	defer r.pre.mu.Unlock()
	now := time.Now()
	r.pre.slices.Thaw(now)
	if total, ok := r.pre.slices.Due(now, slicedReportEvery, true); ok {
		r.reportSliced(total)
	}
}

// reportSliced queues a RepSliced; the queue is buffered, and a report
// lost with the stream is made good by the next total.
func (r *running) reportSliced(total time.Duration) {
	r.mu.Lock()
	k := r.sink
	r.mu.Unlock()
	if k != nil {
		k.send(r.ctx, proto.Report{Kind: proto.RepSliced, Frozen: total})
	}
}

// gangMembers lists the started, gang-scheduled jobs still running here,
// and forgets the ones that ended.
func (s *Service) gangMembers(frozen map[*running]bool) []gangMember {
	s.mu.Lock()
	jobs := make([]*running, 0, len(s.jobs))
	for _, r := range s.jobs {
		jobs = append(jobs, r)
	}
	s.mu.Unlock()
	var out []gangMember
	seen := map[*running]bool{}
	for _, r := range jobs {
		col := r.c.GangColumn
		if col == nil {
			continue
		}
		r.mu.Lock()
		procs := r.procs
		r.mu.Unlock()
		select {
		case <-r.ctx.Done():
			continue // ending: its processes are being killed
		default:
		}
		if procs == nil {
			continue
		}
		seen[r] = true
		out = append(out, gangMember{r: r, col: *col, procs: procs, frozen: frozen[r]})
	}
	for r := range frozen {
		if !seen[r] {
			delete(frozen, r)
		}
	}
	return out
}

// gangFree is the offer's free columns: nil when the rotation is off.
func (s *Service) gangFree() *uint64 {
	if s.cfg.Gang.Columns == 0 {
		return nil
	}
	var occupied []int
	s.mu.Lock()
	for _, r := range s.jobs {
		if r.c.GangColumn != nil {
			occupied = append(occupied, *r.c.GangColumn)
		}
	}
	s.mu.Unlock()
	free := s.cfg.Gang.FreeColumns(occupied)
	return &free
}

// checkGangColumn refuses a column a host whose rotation has columns
// columns (0: none) never runs. Pure.
func checkGangColumn(col *int, columns int) error {
	if col == nil {
		return nil
	}
	if *col < 0 || *col >= gang.MaxColumns || (columns > 0 && *col >= columns) {
		return fmt.Errorf("time-slice column %d is outside this host's %d columns (agents of a grid must share one rotation)", *col, columns)
	}
	return nil
}
