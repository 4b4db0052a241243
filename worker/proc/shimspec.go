package proc

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"syscall"
)

// The limits shim. Resource limits and the change of user must be in place
// before the program's first instruction, and Go's fork/exec has no hook
// between fork and exec. So when a Spec has limits (or a RunAs user is
// configured) the runner starts the agent's own binary again
// (/proc/self/exe) with shimEnv set; the init function of this package sees
// it, applies the limits, drops privileges, and execs the program in the
// same process. Exec errors come back on a close-on-exec pipe (fd 3), so
// Start reports them as it would for a direct exec.
//
// The shim's own environment holds shimEnv and nothing else; the program's
// environment comes on fd 4 (a memfd). The shim may run as root and the
// agent binary may be dynamically linked: variables a submitter chose, such
// as LD_PRELOAD, must reach only the program, after privileges are dropped.

// shimEnv carries the shimSpec to the shim; it never reaches the program.
const shimEnv = "ZORILLA_PROC_SHIM"

// shimArgv0 names the shim in process listings until it execs.
const shimArgv0 = "zorilla-proc-shim"

// maxShimSpec bounds an encoded shimSpec, so a stray variable cannot make
// the shim parse much.
const maxShimSpec = 512

// shimSpec is what the shim applies before it execs the program.
type shimSpec struct {
	Limits  Limits
	RunAs   *Credential // nil: keep the user
	Cgroups int         // cgroup.procs files to join, open on fds 5, 6, ...
	Net     bool        // enter a new network namespace with loopback up
}

// shimKeys are the fields of an encoded shimSpec, in encoding order.
var shimKeys = []string{"cpu", "as", "nofile", "nproc", "fsize", "uid", "gid", "cg", "net"}

// maxShimCgroups bounds the cgroup files the shim joins (one per v1
// controller in use, and the v2 freezer's beside them).
const maxShimCgroups = 4

// fields points at the limits of l, in the order of shimKeys.
func (l *Limits) fields() []*uint64 {
	return []*uint64{&l.CPUSeconds, &l.MemoryBytes, &l.OpenFiles, &l.Processes, &l.FileBytes}
}

// encode gives the shimSpec as "v1 cpu=10 nofile=64 uid=65534 gid=65534".
func (s shimSpec) encode() string {
	var b strings.Builder
	b.WriteString("v1")
	for i, p := range s.Limits.fields() {
		if *p != 0 {
			fmt.Fprintf(&b, " %s=%d", shimKeys[i], *p)
		}
	}
	if s.RunAs != nil {
		fmt.Fprintf(&b, " uid=%d gid=%d", s.RunAs.UID, s.RunAs.GID)
	}
	if s.Cgroups > 0 {
		fmt.Fprintf(&b, " cg=%d", s.Cgroups)
	}
	if s.Net {
		b.WriteString(" net=1")
	}
	return b.String()
}

// decodeShim parses what encode gives, and nothing else: unknown, repeated
// or zero fields, a uid without a gid, and out-of-range cg and net are
// refused.
func decodeShim(v string) (shimSpec, error) {
	var s shimSpec
	if len(v) > maxShimSpec {
		return s, fmt.Errorf("proc: shim spec of %d bytes exceeds %d", len(v), maxShimSpec)
	}
	words := strings.Split(v, " ")
	if words[0] != "v1" {
		return s, fmt.Errorf("proc: shim spec version %q, want v1", words[0])
	}
	vals := map[string]uint64{}
	for _, w := range words[1:] {
		k, num, ok := strings.Cut(w, "=")
		n, err := strconv.ParseUint(num, 10, 64)
		switch {
		case !ok || err != nil || n == 0 || num != strconv.FormatUint(n, 10):
			return s, fmt.Errorf("proc: shim spec field %q is not key=positive number", w)
		case !isShimKey(k):
			return s, fmt.Errorf("proc: shim spec field %q unknown", k)
		}
		if _, dup := vals[k]; dup {
			return s, fmt.Errorf("proc: shim spec field %q repeated", k)
		}
		vals[k] = n
	}
	return s.fill(vals)
}

func isShimKey(k string) bool {
	for _, key := range shimKeys {
		if k == key {
			return true
		}
	}
	return false
}

func (s shimSpec) fill(vals map[string]uint64) (shimSpec, error) {
	for i, p := range s.Limits.fields() {
		*p = vals[shimKeys[i]]
	}
	uid, hasUID := vals["uid"]
	gid, hasGID := vals["gid"]
	switch {
	case hasUID != hasGID:
		return shimSpec{}, errors.New("proc: shim spec has uid and gid only together")
	case uid > 1<<32-1 || gid > 1<<32-1:
		return shimSpec{}, fmt.Errorf("proc: shim spec uid %d or gid %d out of range", uid, gid)
	case vals["cg"] > maxShimCgroups:
		return shimSpec{}, fmt.Errorf("proc: shim spec cg=%d exceeds %d", vals["cg"], maxShimCgroups)
	case vals["net"] > 1:
		return shimSpec{}, fmt.Errorf("proc: shim spec net=%d, want 1", vals["net"])
	case hasUID:
		s.RunAs = &Credential{UID: uint32(uid), GID: uint32(gid)}
	}
	s.Cgroups, s.Net = int(vals["cg"]), vals["net"] == 1
	return s, nil
}

// maxEnvPayload bounds the environment the shim reads, as the kernel bounds
// one (ARG_MAX is commonly 2 MiB for arguments and environment together).
const maxEnvPayload = 2 << 20

// encodeEnv gives env as the shim reads it: entries separated by NUL.
func encodeEnv(env []string) []byte { return []byte(strings.Join(env, "\x00")) }

// decodeEnv parses what encodeEnv gives; an empty payload is an empty
// environment, and every entry must be KEY=value.
func decodeEnv(b []byte) ([]string, error) {
	if len(b) > maxEnvPayload {
		return nil, fmt.Errorf("proc: environment of %d bytes exceeds %d", len(b), maxEnvPayload)
	}
	if len(b) == 0 {
		return nil, nil
	}
	env := strings.Split(string(b), "\x00")
	for i, kv := range env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return nil, fmt.Errorf("proc: environment entry %d is not KEY=value", i)
		}
	}
	return env, nil
}

// maxShimReport bounds what the runner reads from the shim's report pipe.
const maxShimReport = 64

// shimReport is what the shim writes on fd 3 when it fails: the stage that
// failed and the errno, "exec 2".
func shimReport(stage string, errno syscall.Errno) string {
	return stage + " " + strconv.Itoa(int(errno))
}

// shimStages are the stages the shim reports.
var shimStages = map[string]bool{"decode": true, "args": true, "env": true, "cgroup": true,
	"unshare": true, "loopback": true, "setrlimit": true,
	"setgroups": true, "setgid": true, "setuid": true, "prctl": true, "exec": true}

// decodeShimReport turns a report of the shim into the error it stands for;
// an exec failure is an *fs.PathError on program, like a direct exec's.
func decodeShimReport(b []byte, program string) error {
	stage, num, ok := strings.Cut(string(b), " ")
	n, err := strconv.Atoi(num)
	if !ok || err != nil || !shimStages[stage] || n < 0 || n > 4095 {
		return fmt.Errorf("proc: shim failed with an unreadable report %q", b)
	}
	errno := syscall.Errno(n)
	if stage == "exec" {
		return &fs.PathError{Op: "exec", Path: program, Err: errno}
	}
	if n == 0 {
		return fmt.Errorf("proc: shim %s failed", stage)
	}
	return fmt.Errorf("proc: shim %s: %w", stage, errno)
}
