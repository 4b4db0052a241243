//go:build linux

package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// process is a started process. Its run goroutine alone decides when to
// signal the group and owns the killed/timed-out state; other goroutines
// talk to it through killReq and read exit after done is closed.
type process struct {
	os      *os.Process
	pid     int
	cfg     Config
	timeout time.Duration
	sandbox *Sandbox // nil: none
	events  Events   // the sandbox's events before the process started
	files   *childFiles
	sink    *sink

	killReq   chan bool      // true: SIGKILL at once (abort), false: Kill
	freezeReq chan freezeReq // Freeze and Thaw
	exited    chan error     // closed (after the error, if any) when the leader has exited
	readers   chan struct{}  // closed when both output readers are done
	done      chan struct{}
	exit      Exit // written by run before done is closed
}

// watch starts the goroutines that read the output of osp, notice its end,
// and run its lifecycle.
func watch(ctx context.Context, osp *os.Process, cfg Config, s Spec, events Events, files *childFiles, sk *sink) *process {
	p := &process{
		os: osp, pid: osp.Pid, cfg: cfg, timeout: s.Timeout, sandbox: s.Sandbox, events: events, files: files, sink: sk,
		killReq:   make(chan bool, 1),
		freezeReq: make(chan freezeReq),
		exited:    make(chan error, 1),
		readers:   make(chan struct{}),
		done:      make(chan struct{}),
	}
	var wg sync.WaitGroup
	for stream, f := range map[string]*os.File{Stdout: files.stdout, Stderr: files.stderr} {
		wg.Go(func() {
			if err := readLines(f, cfg.MaxLineBytes, sk.emitter(stream)); err != nil && !errors.Is(err, os.ErrClosed) {
				log.Debugf("pid %d: read %s: %v", p.pid, stream, err)
			}
		})
	}
	go func() { wg.Wait(); close(p.readers) }()
	go p.awaitLeader()
	go p.run(ctx)
	return p
}

// Pid implements Process.
func (p *process) Pid() int { return p.pid }

// Done implements Process.
func (p *process) Done() <-chan struct{} { return p.done }

// Wait implements Process.
func (p *process) Wait() Exit {
	<-p.done
	return p.exit
}

// Kill implements Process. The request is handled by the run goroutine; a
// request already pending, or a process already gone, makes it a no-op.
func (p *process) Kill() error {
	select {
	case p.killReq <- false:
	default:
	}
	return nil
}

// abort kills the group with SIGKILL at once and waits for the end. Start
// uses it when the shim failed, so nothing it forked is left.
func (p *process) abort() {
	select {
	case p.killReq <- true:
	case <-p.done:
	}
	<-p.done
}

// awaitLeader blocks until the leader has exited, without reaping it: while
// it is a zombie its PID, and so the process group ID, cannot be reused, so
// the group may still be signalled safely.
func (p *process) awaitLeader() {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, p.pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			if err != nil {
				p.exited <- fmt.Errorf("wait for pid %d: %w", p.pid, err)
			}
			close(p.exited)
			return
		}
	}
}

// lifecycle is the state the run goroutine owns.
type lifecycle struct {
	killed, timedOut bool
	lost             bool        // the leader could not be waited for: never signal its group again
	grace            *time.Timer // armed by the first SIGTERM
	graceFired       bool
	errs             []error
}

// graceC is the channel of the grace timer while it may still fire.
func (st *lifecycle) graceC() <-chan time.Time {
	if st.grace == nil || st.graceFired {
		return nil
	}
	return st.grace.C
}

// run handles kill requests, the wall-clock limit and ctx until the leader
// exits, then kills the rest of the group, reaps everything and settles.
func (p *process) run(ctx context.Context) {
	defer close(p.done)
	var st lifecycle
	clk := newClock(p.timeout)
	defer clk.stop()
	ctxDone := ctx.Done()
	for exited := false; !exited; {
		select {
		case err := <-p.exited:
			exited = true
			st.lost = err != nil
			st.addErr(err)
		case now := <-p.killReq:
			st.killed = true
			p.thawForEnd(clk)
			p.terminate(&st, now)
		case <-ctxDone:
			ctxDone = nil
			st.killed = true
			p.thawForEnd(clk)
			p.terminate(&st, false)
		case <-clk.C():
			st.timedOut = true
			p.terminate(&st, false)
		case req := <-p.freezeReq:
			req.reply <- p.applyFreeze(&st, clk, req)
		case <-st.graceC():
			st.graceFired = true
			st.addErr(p.signal(unix.SIGKILL))
		}
	}
	if st.grace != nil {
		st.grace.Stop()
	}
	p.exit = p.finish(&st) // SIGKILL ends frozen and stopped tasks alike
	p.exit.Frozen = clk.frozenFor()
}

// terminate sends SIGTERM (and SIGCONT, so a stopped group sees it) and arms
// the grace timer, the first time only; with now it sends SIGKILL at once.
func (p *process) terminate(st *lifecycle, now bool) {
	switch {
	case now:
		st.addErr(p.signal(unix.SIGKILL))
	case st.grace == nil:
		st.addErr(p.signal(unix.SIGTERM))
		st.addErr(p.signal(unix.SIGCONT))
		st.grace = time.NewTimer(p.cfg.KillGrace)
	}
}

// signal sends sig to the process group. It is only called while the
// leader is not yet reaped. A group already gone is not an error.
func (p *process) signal(sig unix.Signal) error {
	err := unix.Kill(-p.pid, sig)
	if err == nil || errors.Is(err, unix.ESRCH) {
		return nil
	}
	return fmt.Errorf("signal group %d with %s: %w", p.pid, unix.SignalName(sig), err)
}

func (st *lifecycle) addErr(err error) {
	if err != nil {
		st.errs = append(st.errs, err)
	}
}

// finish runs once the leader has exited: it kills what is left of the
// group, reaps the leader and the group's orphans, waits for the output to
// end, and builds the Exit.
func (p *process) finish(st *lifecycle) Exit {
	var state *os.ProcessState
	settle := time.Now().Add(p.cfg.SettleTimeout)
	if !st.lost {
		st.addErr(p.signal(unix.SIGKILL)) // the leader is a zombie: the group ID is still ours
		var err error
		state, err = p.os.Wait()
		st.addErr(err)
		st.addErr(p.reapGroup(settle))
	}
	st.addErr(p.drainOutput(settle))
	e := Exit{TimedOut: st.timedOut, Killed: st.killed, Err: errors.Join(st.errs...), Tail: p.sink.lines()}
	if state != nil {
		ws := state.Sys().(syscall.WaitStatus)
		e.Code = ws.ExitStatus()
		if ws.Signaled() {
			e.Code = 128 + int(ws.Signal())
			e.Signal = unix.SignalName(ws.Signal())
		}
	}
	if p.sandbox != nil {
		// The counters are the job's: they count against this process
		// only if it failed while they rose.
		now := p.sandbox.Events()
		failed := e.Code != 0 || e.Signal != ""
		e.OutOfMemory = failed && now.OOMKills > p.events.OOMKills
		e.PidsLimit = failed && now.PidsLimit > p.events.PidsLimit
	}
	return e
}

// reapGroup reaps the members of the group that were left to this process
// (as subreaper) and waits until the group is empty or until the deadline.
// No signal is sent any more: the leader is reaped, so its ID is free.
func (p *process) reapGroup(deadline time.Time) error {
	backoff := time.Millisecond
	for {
		p.reapOrphans()
		err := unix.Kill(-p.pid, 0)
		if errors.Is(err, unix.ESRCH) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("process group %d still has members %v after its leader exited (kill: %v)",
				p.pid, p.cfg.SettleTimeout, err)
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, 50*time.Millisecond)
	}
}

// reapOrphans reaps every exited child of this process in the group.
func (p *process) reapOrphans() {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PGID, p.pid, &info, unix.WEXITED|unix.WNOHANG, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		// With WNOHANG and nothing to reap, the kernel leaves si_signo 0.
		if err != nil || info.Signo == 0 {
			return
		}
	}
}

// drainOutput waits until both output pipes are at EOF; past the deadline
// it closes them (a process that left the group still holds them).
func (p *process) drainOutput(deadline time.Time) error {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	var err error
	select {
	case <-p.readers:
	case <-t.C:
		err = fmt.Errorf("output of process %d still open %v after it exited: a process left its group", p.pid, p.cfg.SettleTimeout)
	}
	_ = p.files.stdout.Close() // unblocks the readers if they are still reading
	_ = p.files.stderr.Close()
	<-p.readers
	return err
}
