package worker

import (
	"time"

	"github.com/zorilla-p2p/zorilla/worker/proc"
)

// sampleMemory is the one goroutine that measures the memory the running
// jobs use and tells the lease table (Leases.SetUsed), so that admission
// charges each job the more of what it declared and what it uses.
func (s *Service) sampleMemory() {
	defer s.wg.Done()
	t := time.NewTicker(s.cfg.MemorySample)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		for _, r := range s.runningJobs() {
			if used, ok := r.memoryUsed(); ok {
				s.leases.SetUsed(r.id, used)
			}
		}
	}
}

// runningJobs lists the jobs committed here.
func (s *Service) runningJobs() []*running {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*running, 0, len(s.jobs))
	for _, r := range s.jobs {
		out = append(out, r)
	}
	return out
}

// memoryUsed is what the job's processes here use now: its cgroup's
// count, or the resident memory of its processes without one; false
// before they started.
func (r *running) memoryUsed() (int64, bool) {
	r.mu.Lock()
	procs := r.procs
	r.mu.Unlock()
	if len(procs) == 0 {
		return 0, false
	}
	if n, ok := r.sandbox.MemoryCurrent(); ok {
		return n, true
	}
	pids := make([]int, 0, len(procs))
	for _, p := range procs {
		pids = append(pids, p.Pid())
	}
	return proc.ResidentMemory(pids), true
}
