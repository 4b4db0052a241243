package proc

import "errors"

// ErrNotFreezable is returned by Freeze and Thaw for a Process this package
// did not start (a test's fake, for instance): it cannot be stopped in place.
var ErrNotFreezable = errors.New("proc: process cannot be frozen (not started by this package's runner)")

// Freeze stops every process of one job on this host, in place: they keep
// their memory and their sockets but get no CPU until Thaw. ps are the
// job's processes here (its ranks), sb their sandbox (nil: none).
//
// When sb has a cgroup v2 (its own, or on a hybrid host one beside its v1
// cgroups), its freezer (cgroup.freeze) stops everything in the cgroup,
// even a process that left its process group, and Freeze returns once the
// kernel reports the cgroup frozen. Otherwise each
// process group gets SIGSTOP, and with a v1 cgroup every process listed in
// it too. Time a process spends frozen does not count against its
// Spec.Timeout, and Exit.Frozen reports it. Killing a frozen process thaws
// it first, so it sees SIGTERM (with the cgroup freezer that thaws the
// whole sandbox: kill all of a frozen job's processes, not some). Freeze and Thaw of one job must not run
// concurrently; freezing a frozen job, or thawing a running one, is a
// no-op. A process that has already ended is skipped.
func Freeze(sb *Sandbox, ps []Process) error { return freezeJob(sb, ps, true) }

// Thaw continues the processes Freeze stopped.
func Thaw(sb *Sandbox, ps []Process) error { return freezeJob(sb, ps, false) }
