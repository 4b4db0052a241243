package worker

import (
	"fmt"
	"path/filepath"

	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/worker/proc"
)

// minJobMemory is the least memory limit of a job: its processes start
// through the shim, a re-executed agent binary, which needs a few MiB.
const minJobMemory = 16 << 20

// jobResources are the limits of a job's cgroup here, from its lease and
// the owner's policy: the memory the job asked for, or without a request
// its share of what the owner lends (Memory / J), never more than that
// nor less than minJobMemory; the cores its lease holds; pidsPerProc
// processes (and threads) for each of its processes here.
func jobResources(p Policy, l Lease, procs int, pidsPerProc int64) proc.Resources {
	mem := l.Memory
	if mem <= 0 && p.MaxJobs > 0 {
		mem = p.Memory / int64(p.MaxJobs)
	}
	mem = max(min(mem, p.Memory), minJobMemory)
	return proc.Resources{MemoryBytes: max(mem, 0), Pids: pidsPerProc * int64(max(procs, 1)), CPUs: float64(max(l.Cores, procs, 1))}
}

// sandboxWords says, for the submitter, what the sandbox did to a copy
// that failed; "" when it did nothing.
func sandboxWords(x proc.Exit, res proc.Resources) string {
	switch {
	case x.OutOfMemory:
		return fmt.Sprintf("stopped: out of memory (the job may use %s on this host)", proto.FormatSize(res.MemoryBytes))
	case x.PidsLimit:
		return fmt.Sprintf("a fork failed: the job reached its limit of %d processes on this host", res.Pids)
	}
	return ""
}

// prepare stages the job's files, makes each copy's working folder, and
// makes the job's sandbox, which then owns the job folder.
func (r *running) prepare() error {
	if err := r.stage(); err != nil {
		return err
	}
	for _, p := range r.c.Procs {
		if err := r.stageRank(p); err != nil {
			return err
		}
	}
	s := r.svc
	l, _ := s.leases.Get(r.lease)
	r.res = jobResources(s.leases.Policy(), l, len(r.c.Procs), s.cfg.PidsPerProcess)
	b, err := s.runner.NewSandbox(filepath.Base(r.dir), r.res)
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	r.sandbox = b
	if err := b.Own(r.dir); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	return nil
}

// suffix gives ": why", or "" for no why.
func suffix(why string) string {
	if why == "" {
		return ""
	}
	return ": " + why
}
