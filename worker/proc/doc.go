// Package proc starts, watches, limits and cleans up the processes of jobs on
// the local machine. It knows nothing of the network: the worker hands it a
// Spec (job, rank, folder, staged program, environment, wall-clock limit,
// resource limits) and gets back a Process to wait for or kill.
//
// What a Runner guarantees for every process it starts:
//
//   - It runs in Spec.Dir, with a minimal environment (PATH, HOME and TMPDIR
//     set to the folder, ZORILLA_JOB/RANK/SIZE/REPLICA, then Spec.Env), stdin
//     from /dev/null, in a process group of its own (its PID is the group ID).
//   - Its resource limits (Limits: CPU seconds, address space, open files,
//     processes, file size) are in place before its first instruction: the
//     runner re-executes the agent's own binary as a small shim that calls
//     setrlimit, joins the sandbox (below), drops privileges to the
//     sandbox's user or Config.RunAs when the agent is root, and execs the
//     program. The shim is the init function of this package,
//     so any binary that links it can serve; it runs only when the runner
//     sets its variable. The shim's own environment holds nothing of the
//     job (the program's comes on a memfd), so variables such as LD_PRELOAD
//     cannot act while it may still be root. Without limits, RunAs or a
//     sandbox the program is exec'd directly.
//   - Kill, the end of Start's ctx, and the wall-clock limit all end the
//     whole group: SIGTERM (and SIGCONT), then SIGKILL after
//     Config.KillGrace. When the process itself exits, whatever it left in
//     its group is killed with SIGKILL.
//   - When Wait returns (Done is closed), no process of the group is left:
//     the leader is reaped only after its group has been signalled (so the
//     group ID cannot have been reused), and with Config.Subreaper the agent
//     adopts and reaps the orphans of the group, so zombies do not pile up
//     even when init does not reap them or the agent is PID 1. If the agent
//     dies, the kernel kills its processes (parent-death signal).
//   - stdout and stderr reach the OutputFunc line by line as they come,
//     lines bounded by Config.MaxLineBytes (longer ones are split), and the
//     last lines are kept in Exit.Tail for error reports.
//
// Cleanup removes a job folder once its processes have ended.
//
// # Sandbox
//
// Runner.NewSandbox makes what the processes of one job share, and a Spec
// that names it (Spec.Sandbox) starts inside it, all through the shim,
// before the program's first instruction:
//
//   - A user of its own. With Config.AutoUsers and the agent as root, each
//     sandbox holds a user and group ID from the range (DefaultUIDRange),
//     no /etc/passwd entry needed; a lock file per ID in Config.UIDLockDir
//     (flock, dropped by the kernel if the agent dies) keeps two agents of
//     the machine from sharing one, and an ID some process still runs as
//     is skipped. The job folder is 0700 and the sandbox's (Sandbox.Own
//     gives it the staged files too).
//   - A cgroup with the job's Resources: memory (swap included), process
//     count, CPU bandwidth. cgroup v2 where the agent's own cgroup offers
//     the memory, pids and cpu controllers, else the v1 hierarchies of
//     those controllers; the cgroups are made below the agent's own (or
//     below Config.CgroupParent, whose limits then bind all the jobs and
//     not the agent), in a folder named Config.CgroupName, which NewRunner
//     sweeps (killing what an earlier life of the agent left there). The shim joins the cgroup
//     by writing to cgroup.procs files the runner opened for it, then
//     closes them. Exit.OutOfMemory and Exit.PidsLimit say when the
//     kernel's OOM killer or the pids limit struck while a process ran.
//     With v1 controllers and a cgroup2 hierarchy mounted too (a hybrid
//     machine), the job also gets a v2 cgroup there with no controller:
//     Freeze uses its cgroup.freeze.
//   - A network namespace per process with only loopback, up (the shim
//     unshares it as root); a unix socket is a path, so the agent's MPI
//     socket is still reached.
//
// Sandbox.Close kills whatever is left in the cgroup and runs as the
// sandbox's user (a process that left its process group included),
// removes the cgroup and gives the user ID back. Isolation says which of
// these the machine allows; a part it refuses is left out, not faked.
//
// Limits of the method: without a cgroup or a user of its own, a process
// that leaves its group (setsid, setpgid) escapes the group kill; the
// runner then reports it in Exit.Err if it keeps the output pipes open.
// What the sandbox does not protect against is in SECURITY.md.
// Processes run only on Linux; elsewhere Start returns an error.
package proc
