//go:build linux

package proc

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// The shim's extra files: its report pipe, the program's environment, and
// the cgroup.procs files it joins (cgroupFD, cgroupFD+1, ...).
const (
	shimFD   = 3
	envFD    = 4
	cgroupFD = 5
)

// init turns this process into the shim when the runner started it as one.
// It costs one environment lookup in every other process.
func init() {
	if v, ok := os.LookupEnv(shimEnv); ok {
		runShim(v)
	}
}

// runShim applies the shimSpec encoded in v and execs the program named in
// os.Args[1]. It returns only by exiting with status 127 after reporting
// what failed on shimFD.
func runShim(v string) {
	runtime.LockOSThread() // credentials and exec on one thread
	stage, err := shimExec(v)
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		errno = 0
	}
	_, _ = unix.Write(shimFD, []byte(shimReport(stage, errno)))
	os.Exit(127)
}

// shimExec returns the stage that failed and why; on success it does not
// return at all.
func shimExec(v string) (string, error) {
	// Close the report pipe when exec succeeds; that EOF is Start's signal.
	if _, err := unix.FcntlInt(shimFD, unix.F_SETFD, unix.FD_CLOEXEC); err != nil {
		return "decode", err
	}
	spec, err := decodeShim(v)
	if err != nil {
		return "decode", err
	}
	if len(os.Args) < 2 {
		return "args", unix.EINVAL
	}
	env, err := readEnv()
	if err != nil {
		return "env", err
	}
	if err := joinCgroups(spec.Cgroups); err != nil {
		return "cgroup", err
	}
	if spec.Net {
		if stage, err := enterNetns(); err != nil {
			return stage, err
		}
	}
	if err := applyLimits(spec.Limits); err != nil {
		return "setrlimit", err
	}
	if spec.RunAs != nil {
		if stage, err := dropPrivileges(*spec.RunAs); err != nil {
			return stage, err
		}
	}
	return "exec", retryBusy(func() error { return unix.Exec(os.Args[1], os.Args[1:], env) })
}

// joinCgroups moves the shim into the cgroups whose cgroup.procs files are
// open on fds cgroupFD.. (writing "0" means the writer), and closes them:
// the program must not keep a file that moves processes between cgroups.
func joinCgroups(n int) error {
	for fd := cgroupFD; fd < cgroupFD+n; fd++ {
		_, err := unix.Write(fd, []byte("0"))
		_ = unix.Close(fd)
		if err != nil {
			return err
		}
	}
	return nil
}

// rlimitResources are the resources of Limits, in the order of fields().
var rlimitResources = []int{unix.RLIMIT_CPU, unix.RLIMIT_AS, unix.RLIMIT_NOFILE, unix.RLIMIT_NPROC, unix.RLIMIT_FSIZE}

// applyLimits sets each non-zero limit as both soft and hard limit, never
// above the current hard limit. CPU time gets one second between the soft
// limit (SIGXCPU, which a program may catch to save its state) and the
// hard one (SIGKILL).
func applyLimits(l Limits) error {
	for i, p := range l.fields() {
		if *p == 0 {
			continue
		}
		var cur unix.Rlimit
		if err := unix.Getrlimit(rlimitResources[i], &cur); err != nil {
			return err
		}
		hard := *p
		if rlimitResources[i] == unix.RLIMIT_CPU {
			hard++
		}
		lim := unix.Rlimit{Cur: min(*p, cur.Max), Max: min(hard, cur.Max)}
		if err := unix.Setrlimit(rlimitResources[i], &lim); err != nil {
			return err
		}
	}
	return nil
}

// dropPrivileges makes this thread c, with no supplementary groups and no
// way back to root through setuid programs, and re-arms the parent-death
// signal that a change of user clears.
//
// Only this thread changes user (raw system calls, not Go's all-threads
// Setuid): exec runs on it and ends the others, and the runtime's other
// threads must not count against the user's RLIMIT_NPROC, which execve
// checks after a change of user.
func dropPrivileges(c Credential) (string, error) {
	if _, _, errno := unix.RawSyscall(sysSetgroups, 0, 0, 0); errno != 0 {
		return "setgroups", errno
	}
	if _, _, errno := unix.RawSyscall(sysSetgid, uintptr(c.GID), 0, 0); errno != 0 {
		return "setgid", errno
	}
	if _, _, errno := unix.RawSyscall(sysSetuid, uintptr(c.UID), 0, 0); errno != 0 {
		return "setuid", errno
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return "prctl", err
	}
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
		return "prctl", err
	}
	return "", nil
}

// readEnv reads the program's environment from envFD and closes it.
func readEnv() ([]string, error) {
	f := os.NewFile(envFD, "env")
	if f == nil {
		return nil, unix.EBADF
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxEnvPayload+1))
	if err != nil {
		return nil, err
	}
	env, err := decodeEnv(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", unix.EINVAL, err)
	}
	return env, nil
}
