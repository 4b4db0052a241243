//go:build linux

package proc

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Sandbox is what the processes of one job on this machine share: the user
// they run as (a user ID of their own with Config.AutoUsers), a cgroup
// with the job's Resources, and a network namespace per process with only
// loopback. Pass it in Spec.Sandbox; Close it once every process has
// ended.
type Sandbox struct {
	name  string
	cred  *Credential // nil: the runner's RunAs, or the agent's own user
	lock  *os.File    // holds cred's user ID, with AutoUsers
	pool  *uidPool    // where lock comes from
	cg    *jobCgroup  // nil: no cgroup
	netns bool

	closeOnce sync.Once
	closeErr  error
}

// NewSandbox makes the sandbox of a job. name tells it from the runner's
// other sandboxes (the job folder's name will do). What the machine does
// not allow (cgroups, network namespaces) is left out, as Isolation says;
// what it allows but fails is an error.
func (r *osRunner) NewSandbox(name string, res Resources) (*Sandbox, error) {
	switch {
	case r.err != nil:
		return nil, r.err
	case !validName(name):
		return nil, fmt.Errorf("proc: sandbox name %q: want 1-128 letters, digits, '-', '_', '.'", name)
	}
	if err := res.validate(); err != nil {
		return nil, err
	}
	b := &Sandbox{name: name, cred: r.runAs, netns: r.netns}
	if r.users != nil {
		uid, lock, err := r.users.take()
		if err != nil {
			return nil, fmt.Errorf("proc: sandbox %s: %w", name, err)
		}
		b.cred, b.lock, b.pool = &Credential{UID: uid, GID: uid}, lock, r.users
	}
	if r.cgroups != nil {
		cg, err := r.cgroups.newJobCgroup(cgroupName(name), res)
		if err != nil {
			_ = b.Close()
			return nil, fmt.Errorf("proc: sandbox %s: %w", name, err)
		}
		b.cg = cg
	}
	return b, nil
}

// cgroupName is the cgroup folder of a sandbox: its name and a hash of it,
// so that names differing only in case cannot meet on any file system.
func cgroupName(name string) string {
	h := sha256.Sum256([]byte(name))
	return name + "-" + hex.EncodeToString(h[:4])
}

// Credential is the user the sandbox's processes run as; nil when they run
// as the agent's user.
func (b *Sandbox) Credential() *Credential { return b.cred }

// Own gives path, and everything below it, to the sandbox's user, without
// following symbolic links. Without a user of its own it does nothing.
func (b *Sandbox) Own(path string) error {
	if b.cred == nil {
		return nil
	}
	return filepath.WalkDir(path, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(p, int(b.cred.UID), int(b.cred.GID)); err != nil {
			return fmt.Errorf("proc: give %s to uid %d: %w", p, b.cred.UID, err)
		}
		return nil
	})
}

// Events says what the kernel did to the sandbox's processes so far.
func (b *Sandbox) Events() Events {
	if b.cg == nil {
		return Events{}
	}
	return b.cg.events()
}

// Close ends every process left in the sandbox (in its cgroup, or running
// as its own user ID: even one that left its process group), removes the
// cgroup and gives the user ID back. It may be called more than once.
func (b *Sandbox) Close() error {
	b.closeOnce.Do(func() {
		var errs []error
		if b.cg != nil {
			errs = append(errs, b.cg.remove(10*time.Second))
		}
		if b.lock != nil {
			n, err := 0, error(nil)
			if b.cg == nil { // the cgroup held everything; without one, the user ID does
				n, err = killUser(b.cred.UID, 10*time.Second)
			}
			if n > 0 {
				log.Infow("killed processes left running as the job's user", "sandbox", b.name, "uid", b.cred.UID, "processes", n)
			}
			if err == nil {
				errs = append(errs, b.pool.release(b.lock))
			} else {
				// Keep the ID held: a process that will not die still runs as it.
				errs = append(errs, err)
			}
		}
		b.closeErr = errors.Join(errs...)
	})
	return b.closeErr
}

// Isolation implements Runner.
func (r *osRunner) Isolation() Isolation { return r.iso }

// Close implements Runner: it removes the folder of the runner's cgroups,
// once its sandboxes are closed.
func (r *osRunner) Close() error {
	if r.cgroups == nil {
		return nil
	}
	var errs []error
	for _, d := range r.cgroups.dirs() {
		errs = append(errs, removeCgroup(d, 10*time.Second))
	}
	return errors.Join(errs...)
}

// IsolatesNetwork reports whether the job's processes get a network
// namespace with only loopback.
func (b *Sandbox) IsolatesNetwork() bool { return b != nil && b.netns }
