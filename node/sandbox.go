package node

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/zorilla-p2p/zorilla/worker/proc"
)

// Values of Config.RunAs and Config.JobNetwork.
const (
	RunAsAuto          = "auto"     // a user ID of its own per running job (as root)
	RunAsNone          = "none"     // jobs run as the agent's user
	JobNetworkIsolated = "isolated" // a network namespace per process, loopback only
	JobNetworkHost     = "host"     // the host's network
)

// SandboxInfo says what the sandbox of jobs enforces on this agent, in
// GET /v1/id and at start.
type SandboxInfo struct {
	Users   string `json:"users"`
	Cgroups string `json:"cgroups"`
	Freezer string `json:"freezer,omitempty"`
	Network string `json:"network"`
}

// String gives the sandbox on one line.
func (s SandboxInfo) String() string {
	return fmt.Sprintf("users: %s; cgroups: %s; freezer: %s; network: %s", s.Users, s.Cgroups, s.Freezer, s.Network)
}

// checkSandbox checks the sandbox settings.
func checkSandbox(c Config) error {
	if _, err := uidRange(c.UIDRange); err != nil {
		return fmt.Errorf("uid range: %w", err)
	}
	if c.JobNetwork != JobNetworkIsolated && c.JobNetwork != JobNetworkHost {
		return fmt.Errorf("job network %q: want %s or %s", c.JobNetwork, JobNetworkIsolated, JobNetworkHost)
	}
	if c.RunAs != RunAsAuto && c.RunAs != RunAsNone {
		if _, err := lookupUser(c.RunAs); err != nil {
			return err
		}
	}
	return nil
}

// uidRange is UIDRange parsed; empty is proc's default.
func uidRange(s string) (proc.UIDRange, error) {
	if s == "" {
		return proc.DefaultUIDRange, nil
	}
	return proc.ParseUIDRange(s)
}

// lookupUser resolves "NAME", "UID" or "UID:GID" to an unprivileged user.
func lookupUser(s string) (proc.Credential, error) {
	var c proc.Credential
	if a, b, ok := strings.Cut(s, ":"); ok || isDigits(s) {
		uid, err1 := strconv.ParseUint(a, 10, 32)
		gid, err2 := uid, error(nil)
		if ok {
			gid, err2 = strconv.ParseUint(b, 10, 32)
		}
		if err1 != nil || err2 != nil {
			return c, fmt.Errorf("run as %q: want auto, none, a user name, UID or UID:GID", s)
		}
		c = proc.Credential{UID: uint32(uid), GID: uint32(gid)}
	} else {
		u, err := user.Lookup(s)
		if err != nil {
			return c, fmt.Errorf("run as %q: %w (want auto, none, a user name, UID or UID:GID)", s, err)
		}
		uid, _ := strconv.ParseUint(u.Uid, 10, 32)
		gid, _ := strconv.ParseUint(u.Gid, 10, 32)
		c = proc.Credential{UID: uint32(uid), GID: uint32(gid)}
	}
	if c.UID == 0 || c.GID == 0 {
		return c, fmt.Errorf("run as %q: that is root, not an unprivileged user (use --run-as none to run jobs as root)", s)
	}
	return c, nil
}

func isDigits(s string) bool {
	_, err := strconv.ParseUint(s, 10, 32)
	return err == nil
}

// sandboxUsers reports whether jobs run as users other than the agent's.
func (c Config) sandboxUsers() bool { return os.Geteuid() == 0 && c.RunAs != RunAsNone }

// procConfig is the process runner's config with the sandbox settings;
// cgroupKey tells this agent's cgroups from other agents' on the machine.
func (c Config) procConfig(cgroupKey string) (proc.Config, error) {
	pc := c.Services.Proc
	pc.IsolateNetwork = pc.IsolateNetwork && c.JobNetwork != JobNetworkHost
	pc.CgroupName = "zorilla-" + shortHash(cgroupKey)
	switch c.RunAs {
	case RunAsNone:
		pc.AutoUsers, pc.RunAs = nil, nil
	case RunAsAuto:
		r, err := uidRange(c.UIDRange)
		if err != nil {
			return pc, err
		}
		pc.AutoUsers = &r
	default:
		cred, err := lookupUser(c.RunAs)
		if err != nil {
			return pc, err
		}
		pc.RunAs, pc.AutoUsers = &cred, nil
	}
	return pc, nil
}

func shortHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:8])
}

// jobsRoot is where job folders and the MPI socket go. Jobs that run as the
// agent's user use work, the agent's own folder. Jobs of users of their
// own must reach their folders and the socket, but nothing else of the
// agent's: they go to a folder of the agent's that others may pass through
// but not list, named after work (so that a restarted agent finds and
// sweeps what it left), under /var/tmp; the data dir stays 0700.
func jobsRoot(work string, sandboxed bool) (string, error) {
	if !sandboxed {
		return work, nil
	}
	if err := os.Chmod(work, 0o700); err != nil {
		return "", fmt.Errorf("node: make %s private: %w", work, err)
	}
	if err := os.MkdirAll(filepath.Dir(sandboxRoot(work)), 0o755); err != nil {
		return "", fmt.Errorf("node: jobs folder: %w", err)
	}
	root := sandboxRoot(work)
	if err := os.Mkdir(root, 0o711); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("node: jobs folder: %w", err)
	}
	if err := proc.CheckPrivateDir(root); err != nil {
		return "", fmt.Errorf("node: jobs folder: %w (remove it, or use --run-as none)", err)
	}
	if err := os.Chmod(root, 0o711); err != nil {
		return "", fmt.Errorf("node: jobs folder: %w", err)
	}
	return root, nil
}

// sandboxRoot is the folder of jobs of users of their own for the agent
// whose work folder is work: in /var/tmp, made if missing (a container
// from scratch has none).
func sandboxRoot(work string) string {
	base := "/var/tmp"
	if abs, err := filepath.Abs(work); err == nil {
		work = abs
	}
	return filepath.Join(base, "zorilla-"+shortHash(work))
}

// JobsDirOf is where the agent with data dir dataDir keeps its job
// folders: in the data dir, or, when its jobs run as users of their own
// (sandboxed: the agent is root and RunAs is not RunAsNone), outside it.
func JobsDirOf(dataDir string, sandboxed bool) string {
	if sandboxed {
		return filepath.Join(sandboxRoot(dataDir), "work")
	}
	return filepath.Join(dataDir, "work")
}
