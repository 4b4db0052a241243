//go:build linux

package proc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// freezeWait bounds how long Freeze waits for the kernel to report a
// cgroup v2 frozen: it only has to get each task out of the kernel.
const freezeWait = 5 * time.Second

// freezeReq asks a process's run goroutine to stop (frozen) or continue
// its clock, and its group with signals unless a cgroup freezer does it.
type freezeReq struct {
	frozen, signals bool
	reply           chan error
}

func freezeJob(sb *Sandbox, ps []Process, frozen bool) error {
	cgDir := sb.freezerDir()
	signals := cgDir == ""
	var errs []error
	if frozen && !signals {
		errs = append(errs, setCgroupFrozen(cgDir, true))
	}
	for _, p := range ps {
		q, ok := p.(*process)
		if !ok {
			errs = append(errs, fmt.Errorf("freeze %T: %w", p, ErrNotFreezable))
			continue
		}
		errs = append(errs, q.setFrozen(frozen, signals))
	}
	if signals && sb != nil && sb.cg != nil {
		errs = append(errs, signalCgroupV1(sb.cg, frozen))
	}
	if !frozen && !signals {
		errs = append(errs, setCgroupFrozen(cgDir, false))
	}
	return errors.Join(errs...)
}

// setFrozen hands the request to the run goroutine; a process that has
// ended is already as frozen as it will be.
func (p *process) setFrozen(frozen, signals bool) error {
	req := freezeReq{frozen: frozen, signals: signals, reply: make(chan error, 1)}
	select {
	case p.freezeReq <- req:
	case <-p.done:
		return nil
	}
	select {
	case err := <-req.reply:
		return err
	case <-p.done:
		return nil
	}
}

// clock is the wall-clock limit of a process as its run goroutine keeps
// it: stopped while the process is frozen.
type clock struct {
	timer    *time.Timer // nil: no limit
	end      time.Time   // when the limit strikes, while running
	left     time.Duration
	frozenAt time.Time // zero: running
	frozen   time.Duration
	signals  bool // frozen by SIGSTOP (else by the cgroup freezer)
}

func newClock(limit time.Duration) *clock {
	c := &clock{}
	if limit > 0 {
		c.timer = time.NewTimer(limit)
		c.end = time.Now().Add(limit)
	}
	return c
}

// C is the channel of the limit while it may strike: never while frozen.
func (c *clock) C() <-chan time.Time {
	if c.timer == nil || !c.frozenAt.IsZero() {
		return nil
	}
	return c.timer.C
}

func (c *clock) stop() {
	if c.timer != nil {
		c.timer.Stop()
	}
}

// apply handles a freeze request in the run goroutine.
func (p *process) applyFreeze(st *lifecycle, c *clock, req freezeReq) error {
	now := time.Now()
	switch {
	case st.killed || st.timedOut || st.lost:
		return nil // ending: a stop would only delay the end
	case req.frozen && c.frozenAt.IsZero():
		c.frozenAt, c.signals = now, req.signals
		if c.timer != nil {
			c.timer.Stop()
			c.left = max(c.end.Sub(now), 0)
		}
		if req.signals {
			return p.signal(unix.SIGSTOP)
		}
	case !req.frozen && !c.frozenAt.IsZero():
		c.frozen += now.Sub(c.frozenAt)
		c.frozenAt = time.Time{}
		if c.timer != nil {
			c.timer.Reset(c.left)
			c.end = now.Add(c.left)
		}
		if req.signals {
			return p.signal(unix.SIGCONT)
		}
	}
	return nil
}

// thawForEnd continues a frozen process that is being ended, so it can
// handle SIGTERM (a cgroup-frozen task ignores SIGCONT).
func (p *process) thawForEnd(c *clock) {
	if c.frozenAt.IsZero() {
		return
	}
	c.frozen += time.Since(c.frozenAt)
	c.frozenAt = time.Time{}
	if !c.signals {
		if err := setCgroupFrozen(p.sandbox.freezerDir(), false); err != nil {
			log.Debugw("thaw cgroup of a killed process", "pid", p.pid, "err", err)
		}
	}
}

// frozenFor is the time the process has spent frozen so far.
func (c *clock) frozenFor() time.Duration {
	if c.frozenAt.IsZero() {
		return c.frozen
	}
	return c.frozen + time.Since(c.frozenAt)
}

// freezerDir is the folder of the sandbox's cgroup v2 that freezes it
// (cgroupfreezer_linux.go); "" when the job must be stopped by signals.
func (b *Sandbox) freezerDir() string {
	if b == nil || b.cg == nil {
		return ""
	}
	return b.cg.freezer
}

// setCgroupFrozen writes cgroup.freeze and waits (bounded) until
// cgroup.events says the cgroup is in that state.
func setCgroupFrozen(dir string, frozen bool) error {
	v := "0"
	if frozen {
		v = "1"
	}
	if err := writeFile(filepath.Join(dir, "cgroup.freeze"), v); err != nil {
		return fmt.Errorf("freeze cgroup: %w", err)
	}
	deadline := time.Now().Add(freezeWait)
	for delay := time.Millisecond; ; delay = min(2*delay, 50*time.Millisecond) {
		b, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
		if err != nil {
			return fmt.Errorf("freeze cgroup: %w", err)
		}
		if strings.Contains(string(b), "frozen "+v) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup %s: not frozen=%s within %v", dir, v, freezeWait)
		}
		time.Sleep(delay) // the kernel offers no wait on cgroup.events short of inotify
	}
}

// signalCgroupV1 stops or continues every process listed in a v1 cgroup:
// those that left their process group are stopped too.
func signalCgroupV1(cg *jobCgroup, frozen bool) error {
	sig := unix.SIGCONT
	if frozen {
		sig = unix.SIGSTOP
	}
	var errs []error
	for _, d := range cg.folders() {
		b, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		if err != nil {
			errs = append(errs, fmt.Errorf("list cgroup %s: %w", d, err))
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			pid, err := strconv.Atoi(f)
			if err != nil || pid <= 0 {
				continue
			}
			if err := unix.Kill(pid, sig); err != nil && !errors.Is(err, unix.ESRCH) {
				errs = append(errs, fmt.Errorf("signal pid %d: %w", pid, err))
			}
		}
		break // every hierarchy holds the same processes
	}
	return errors.Join(errs...)
}
