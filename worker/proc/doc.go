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
//     setrlimit, drops privileges to Config.RunAs when the agent is root,
//     and execs the program. The shim is the init function of this package,
//     so any binary that links it can serve; it runs only when the runner
//     sets its variable. The shim's own environment holds nothing of the
//     job (the program's comes on a memfd), so variables such as LD_PRELOAD
//     cannot act while it may still be root. Without limits or RunAs the
//     program is exec'd directly.
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
// Limits of the method: a process that leaves its group (setsid, setpgid)
// escapes the group kill; only cgroups would hold it, and they are not used.
// The runner then reports it in Exit.Err if it keeps the output pipes open.
// Processes run only on Linux; elsewhere Start returns an error.
package proc
