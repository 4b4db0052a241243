//go:build linux

package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	logging "github.com/ipfs/go-log/v2"
	"golang.org/x/sys/unix"
)

var log = logging.Logger("zorilla/proc")

// osRunner starts real processes. It holds no mutable state; each process
// has its own.
type osRunner struct {
	cfg     Config
	err     error       // a configuration error, returned by every Start
	runAs   *Credential // cfg.RunAs when the agent is root, else nil
	users   *uidPool    // cfg.AutoUsers when the agent is root, else nil
	cgroups *cgroupRoot // nil: no cgroups
	netns   bool        // sandboxes get a network namespace
	iso     Isolation
}

// NewRunner returns the Runner of this operating system. A Config that does
// not validate gives a Runner whose Start returns the reason. With
// cfg.Subreaper the calling process becomes a child subreaper.
func NewRunner(cfg Config) Runner {
	r := &osRunner{cfg: cfg}
	if err := cfg.validate(); err != nil {
		r.err = err
		r.iso.Err = err
		return r
	}
	r.setUsers()
	r.setCgroups()
	r.setNetwork()
	if cfg.Subreaper {
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			r.err = fmt.Errorf("proc: become child subreaper: %w", err)
		}
	}
	return r
}

// setUsers picks who processes run as: as root, a user ID of their own
// per sandbox (AutoUsers), else the fixed RunAs, else root.
func (r *osRunner) setUsers() {
	root := os.Geteuid() == 0
	switch {
	case !root:
		r.iso.Users = "the agent's own (the agent does not run as root)"
		if r.cfg.RunAs != nil || r.cfg.AutoUsers != nil {
			log.Infof("run-as ignored: the agent does not run as root")
		}
	case r.cfg.AutoUsers != nil:
		pool, err := newUIDPool(*r.cfg.AutoUsers, r.cfg.UIDLockDir)
		if err != nil {
			r.err = fmt.Errorf("proc: %w", err)
			r.iso.Err = r.err
			r.iso.Users = "error: " + err.Error()
			return
		}
		r.users = pool
		r.iso.Users = "own uid per job from " + r.cfg.AutoUsers.String()
	case r.cfg.RunAs != nil:
		r.runAs = r.cfg.RunAs
		r.iso.Users = fmt.Sprintf("uid %d gid %d", r.runAs.UID, r.runAs.GID)
	default:
		r.iso.Users = "root (jobs run as the agent's user)"
	}
}

// setCgroups finds where sandboxes' cgroups go, and sweeps what an earlier
// life of the agent left there.
func (r *osRunner) setCgroups() {
	r.iso.Freezer = describeFreezer(nil)
	if !r.cfg.Cgroups {
		r.iso.Cgroups = "none (turned off)"
		return
	}
	root, err := openCgroups(r.cfg.CgroupName, r.cfg.CgroupParent)
	if err != nil {
		r.iso.Cgroups = "none: cannot write cgroups: " + oneLine(err)
		return
	}
	r.cgroups = root
	r.iso.Cgroups = root.describe()
	r.iso.Freezer = describeFreezer(root)
	n, err := root.sweep()
	if err != nil {
		log.Warnw("leftover cgroups not all removed", "err", err)
	}
	root.dropParents() // made again with the first sandbox
	if n > 0 {
		log.Infow("removed the cgroups an earlier run of the agent left", "cgroups", n)
	}
}

// setNetwork checks whether sandboxes can have a network namespace.
func (r *osRunner) setNetwork() {
	switch {
	case !r.cfg.IsolateNetwork:
		r.iso.Network = "host (turned off)"
	case os.Geteuid() != 0:
		r.iso.Network = "host: the agent is not root"
	default:
		if err := probeNetns(); err != nil {
			r.iso.Network = "host: " + err.Error()
			return
		}
		r.netns, r.iso.OwnNetwork = true, true
		r.iso.Network = "own namespace, loopback only"
	}
}

// oneLine joins the lines of an error's text.
func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", "; ") }

// Start implements Runner.
func (r *osRunner) Start(ctx context.Context, s Spec, out OutputFunc) (Process, error) {
	if r.err != nil {
		return nil, r.err
	}
	if err := s.validate(); err != nil {
		return nil, err
	}
	what := fmt.Sprintf("job %s rank %d replica %d", s.Job, s.Rank, s.Replica)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("proc: start %s: %w", what, err)
	}
	if err := r.makeDir(s.Dir, r.credential(s)); err != nil {
		return nil, fmt.Errorf("proc: start %s: %w", what, err)
	}
	p, err := r.launch(ctx, s, out)
	if err != nil {
		return nil, fmt.Errorf("proc: start %s: %w", what, explainExec(s.Program, err))
	}
	return p, nil
}

// credential is the user the process of s runs as; nil: the agent's.
func (r *osRunner) credential(s Spec) *Credential {
	if s.Sandbox != nil {
		return s.Sandbox.cred
	}
	return r.runAs
}

// makeDir creates the job folder (parents readable by all, the folder
// itself private) and gives it to the user the process runs as.
func (r *osRunner) makeDir(dir string, cred *Credential) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("create parent of %s: %w", dir, err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	info, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("stat %s: %w", dir, err)
	}
	if !info.IsDir() {
		return fmt.Errorf("%s is not a folder", dir)
	}
	if cred != nil {
		if err := os.Lchown(dir, int(cred.UID), int(cred.GID)); err != nil {
			return fmt.Errorf("give %s to uid %d: %w", dir, cred.UID, err)
		}
	}
	return nil
}

// shimFor is what the shim must do for s; ok is false when s needs no
// shim (no limits, no change of user, a sandbox with nothing to join).
func (r *osRunner) shimFor(s Spec) (spec shimSpec, ok bool) {
	spec = shimSpec{Limits: s.Limits, RunAs: r.credential(s)}
	if b := s.Sandbox; b != nil {
		spec.Net = b.netns
		if b.cg != nil {
			spec.Cgroups = len(b.cg.folders())
		}
	}
	return spec, !s.Limits.IsZero() || spec.RunAs != nil || spec.Cgroups > 0 || spec.Net
}

// childFiles are the files a child gets as fds 0, 1, 2 (and 3, 4 for the
// shim) and the parent's ends of its pipes.
type childFiles struct {
	child          []*os.File // closed in the parent once the child runs
	stdout, stderr *os.File   // read ends
	report         *os.File   // read end of the shim's report pipe, or nil
}

func openChildFiles(shim bool, shimEnv []byte, sb *Sandbox) (*childFiles, error) {
	f := &childFiles{}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return nil, err
	}
	f.child = append(f.child, devnull)
	read := []**os.File{&f.stdout, &f.stderr}
	if shim {
		read = append(read, &f.report)
	}
	for _, dst := range read {
		r, w, err := os.Pipe()
		if err != nil {
			f.closeAll()
			return nil, err
		}
		*dst = r
		f.child = append(f.child, w)
	}
	if shim {
		env, err := envFile(shimEnv)
		if err != nil {
			f.closeAll()
			return nil, err
		}
		f.child = append(f.child, env)
		if sb != nil && sb.cg != nil {
			cg, err := sb.cg.procsFiles()
			if err != nil {
				f.closeAll()
				return nil, err
			}
			f.child = append(f.child, cg...)
		}
	}
	return f, nil
}

// envFile returns an anonymous in-memory file holding b, read from the
// start.
func envFile(b []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate("zorilla-env", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("memfd: %w", err)
	}
	f := os.NewFile(uintptr(fd), "zorilla-env")
	if _, err := f.Write(b); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("write environment: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("rewind environment: %w", err)
	}
	return f, nil
}

func (f *childFiles) closeChild() {
	for _, c := range f.child {
		_ = c.Close()
	}
}

func (f *childFiles) closeAll() {
	f.closeChild()
	for _, r := range []*os.File{f.stdout, f.stderr, f.report} {
		if r != nil {
			_ = r.Close()
		}
	}
}

// launch forks and execs s (through the shim if needed), starts watching
// it, and for the shim waits until the program runs.
func (r *osRunner) launch(ctx context.Context, s Spec, out OutputFunc) (*process, error) {
	spec, shim := r.shimFor(s)
	path, argv, env := s.Program, append([]string{s.Program}, s.Args...), s.environ(r.cfg.Path)
	if s.ExtraFile != nil {
		// The program finds it at the descriptor after the child's own:
		// 0-2, and for the shim its report pipe, environment and cgroup
		// files, which it closes before exec (openChildFiles' order).
		fd := 3
		if shim {
			fd = cgroupFD + spec.Cgroups
		}
		env = append(env, fmt.Sprintf("%s=%d", s.ExtraFileEnv, fd))
	}
	var payload []byte // the program's environment, for the shim
	if shim {
		payload = encodeEnv(env)
		path, argv = "/proc/self/exe", append([]string{shimArgv0}, argv...)
		env = []string{shimEnv + "=" + spec.encode()}
	}
	var before Events // read before the fork: the program may hit a limit at once
	if s.Sandbox != nil {
		before = s.Sandbox.Events()
	}
	files, err := openChildFiles(shim, payload, s.Sandbox)
	if err != nil {
		return nil, fmt.Errorf("open pipes: %w", err)
	}
	if s.ExtraFile != nil {
		files.child = append(files.child, s.ExtraFile) // closed here once the child has it
	}
	osp, err := startProcess(path, argv, &os.ProcAttr{
		Dir: s.Dir, Env: env, Files: files.child,
		// Pdeathsig: if the agent dies its processes go with it, since no
		// one would route their messages. It is tied to the forking thread.
		Sys: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	})
	files.closeChild()
	if err != nil {
		files.closeAll()
		return nil, err
	}
	p := watch(ctx, osp, r.cfg, s, before, files, newSink(out, r.cfg.TailLines, r.cfg.TailBytes))
	if shim {
		if err := awaitExec(files.report, r.cfg.StartTimeout, s.Program); err != nil {
			p.abort()
			return nil, err
		}
	}
	return p, nil
}

// execBusyTries bounds the tries to exec a program that the kernel finds
// busy (ETXTBSY): a program the agent has just staged can still be open for
// writing in a child that another goroutine forked at that moment
// (go.dev/issue/22315), until that child execs, within milliseconds.
const execBusyTries = 10

// retryBusy calls exec until it does not fail with ETXTBSY, at most
// execBusyTries times, waiting 1 ms, 2 ms, ... (at most 100 ms) in between.
func retryBusy(exec func() error) error {
	backoff := time.Millisecond
	for i := 1; ; i++ {
		err := exec()
		if !errors.Is(err, syscall.ETXTBSY) || i == execBusyTries {
			return err
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, 100*time.Millisecond)
	}
}

// startProcess is os.StartProcess, retried while the program is busy.
func startProcess(path string, argv []string, attr *os.ProcAttr) (*os.Process, error) {
	var p *os.Process
	err := retryBusy(func() error {
		var err error
		p, err = os.StartProcess(path, argv, attr)
		return err
	})
	return p, err
}

// awaitExec reads the shim's report pipe: EOF with nothing read means the
// shim exec'd the program; a report is the error it met.
func awaitExec(report *os.File, timeout time.Duration, program string) error {
	defer report.Close()
	if err := report.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return fmt.Errorf("shim report pipe: %w", err)
	}
	b, err := io.ReadAll(io.LimitReader(report, maxShimReport))
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("shim did not reach %s within %v", program, timeout)
	case err != nil:
		return fmt.Errorf("shim report pipe: %w", err)
	case len(b) > 0:
		return decodeShimReport(b, program)
	}
	return nil
}
