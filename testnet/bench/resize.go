package bench

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/node"
	"github.com/zorilla-p2p/zorilla/testnet/localnet"
)

// The cost of a resize: one malleable job of heat (-n 4:8, a checkpoint at
// every step) on eight one-slot agents grows from 4 to 8 when a job
// holding the other four ends, gives way back to 4 when a rigid job of 4
// comes, and, once back at 8, is stopped with a checkpoint and resumed:
// the plain checkpoint restart, at the same size, against which a resize
// is measured. Each is timed from its ask to the job stopped at a
// checkpoint, and from there to the job running again.

// ResizeStep is one measured change: the wait for the checkpoint and the
// stop, then the restart.
type ResizeStep struct {
	What          string
	Stop, Restart time.Duration
}

// stamped is a job update and when the bench saw it.
type stamped struct {
	at time.Time
	u  job.Update
}

// watcher keeps a job's updates with their times.
type watcher struct {
	mu sync.Mutex
	us []stamped
}

func (w *watcher) add(u job.Update) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.us = append(w.us, stamped{time.Now(), u})
}

// first is when the first update after from that f accepts came, false if
// none came yet.
func (w *watcher) first(from time.Time, f func(job.Update) bool) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range w.us {
		if !s.at.Before(from) && f(s.u) {
			return s.at, true
		}
	}
	return time.Time{}, false
}

// await polls until f accepts an update after from.
func (w *watcher) await(ctx context.Context, what string, from time.Time, f func(job.Update) bool) (time.Time, error) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if at, ok := w.first(from, f); ok {
			return at, nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		}
	}
}

func noticeHas(s string) func(job.Update) bool {
	return func(u job.Update) bool { return u.Kind == "output" && u.Rank < 0 && strings.Contains(u.Line, s) }
}

func stateIs(st job.State, note string) func(job.Update) bool {
	return func(u job.Update) bool { return u.Kind == "state" && u.State == st && strings.Contains(u.Note, note) }
}

// ResizeCostLocal starts eight one-slot agents of net and runs ResizeCost.
func ResizeCostLocal(ctx context.Context, program string, net *localnet.Net, log io.Writer) ([]ResizeStep, error) {
	prog, err := net.Program(ctx, program, "heat")
	if err != nil {
		return nil, err
	}
	if err := net.Up(ctx, 8, 1); err != nil {
		return nil, err
	}
	return ResizeCost(ctx, net.Agents()[0].Client, prog, log)
}

// ResizeCost measures a grow, a give-way and a plain checkpoint restart
// of one malleable job of heat (prog), submitted through cl, on a network
// of eight one-slot agents.
func ResizeCost(ctx context.Context, cl *node.Client, prog string, log io.Writer) ([]ResizeStep, error) {
	heat := func(lo, hi, steps, pauseMs int) job.Description {
		d := job.NewDescription(prog, []string{strconv.Itoa(steps), strconv.Itoa(pauseMs), "8000"}, hi)
		if lo < hi {
			d.MinNodes, d.ResizeEvery = lo, time.Second
		}
		d.Strategy = job.Spread
		return d
	}
	blocker, err := cl.SubmitFiles(ctx, heat(4, 4, 200, 25), false)
	if err != nil {
		return nil, err
	}
	if err := awaitState(ctx, cl, blocker, job.Running); err != nil {
		return nil, err
	}
	id, err := cl.SubmitFiles(ctx, heat(4, 8, 100000, 25), false)
	if err != nil {
		return nil, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), cancelWait)
		defer cancel()
		_ = cl.Cancel(cctx, id)
	}()
	w := &watcher{}
	wctx, endWatch := context.WithCancel(ctx)
	defer endWatch()
	go func() { _ = cl.Watch(wctx, id, w.add) }()
	var steps []ResizeStep
	fmt.Fprintln(log, "zorilla bench resize: waiting for the job to grow from 4 to 8")
	s, err := measureResize(ctx, w, time.Time{}, "resizing from 4 to")
	if err != nil {
		return steps, err
	}
	steps = append(steps, s)
	fmt.Fprintln(log, "zorilla bench resize: a rigid job of 4 comes")
	if _, err := cl.SubmitFiles(ctx, heat(4, 4, 100, 25), false); err != nil {
		return steps, err
	}
	if s, err = measureResize(ctx, w, time.Now(), "resizing from 8 to"); err != nil {
		return steps, err
	}
	steps = append(steps, s)
	fmt.Fprintln(log, "zorilla bench resize: waiting for the job to grow back to 8, then stopping and resuming it")
	if _, err := measureResize(ctx, w, time.Now(), "resizing from 4 to"); err != nil {
		return steps, err
	}
	if s, err = measureRestart(ctx, cl, w, id); err != nil {
		return steps, err
	}
	return append(steps, s), nil
}

// measureResize times a resize whose notice says words, after from; the
// step is named by what the record says of it ("resized from 4 to 8
// processes: grew").
func measureResize(ctx context.Context, w *watcher, from time.Time, words string) (ResizeStep, error) {
	ask, err := w.await(ctx, words, from, noticeHas(words))
	if err != nil {
		return ResizeStep{}, err
	}
	stopped, err := w.await(ctx, "the start at the new size", ask, stateIs(job.Starting, "resized from"))
	if err != nil {
		return ResizeStep{}, err
	}
	what := ""
	w.first(stopped, func(u job.Update) bool {
		if stateIs(job.Starting, "resized from")(u) {
			what = strings.TrimPrefix(u.Note, "resized ")
			if i := strings.Index(what, "gave way to "); i >= 0 {
				what = what[:i] + "gave way" // the job's ID says nothing here
			}
			return true
		}
		return false
	})
	running, err := w.await(ctx, "the job running at the new size", stopped, stateIs(job.Running, ""))
	if err != nil {
		return ResizeStep{}, err
	}
	return ResizeStep{What: what, Stop: stopped.Sub(ask), Restart: running.Sub(stopped)}, nil
}

// measureRestart stops the running job with a checkpoint and resumes it.
func measureRestart(ctx context.Context, cl *node.Client, w *watcher, id job.ID) (ResizeStep, error) {
	// A stop needs every rank released from mpi.Init: rank 0 says it
	// restarted only then.
	if _, err := w.await(ctx, "the job running again", time.Now().Add(-time.Minute), func(u job.Update) bool {
		return u.Kind == "output" && u.Rank == 0 && strings.Contains(u.Line, "heat: restarted at step")
	}); err != nil {
		return ResizeStep{}, err
	}
	ask := time.Now()
	if err := cl.Stop(ctx, id, 2*time.Minute); err != nil {
		return ResizeStep{}, err
	}
	stopped, err := w.await(ctx, "the job stopped", ask, stateIs(job.Stopped, ""))
	if err != nil {
		return ResizeStep{}, err
	}
	if err := cl.Resume(ctx, id, false); err != nil {
		return ResizeStep{}, err
	}
	go func() { _ = cl.Watch(ctx, id, w.add) }() // a resumed job has a feed of its own
	running, err := w.await(ctx, "the resumed job running", stopped, stateIs(job.Running, ""))
	if err != nil {
		return ResizeStep{}, err
	}
	return ResizeStep{What: "stop and resume at 8 (plain checkpoint restart)", Stop: stopped.Sub(ask), Restart: running.Sub(stopped)}, nil
}

// awaitState polls a job's record until it reaches st.
func awaitState(ctx context.Context, cl *node.Client, id job.ID, st job.State) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		rec, err := cl.Job(ctx, id)
		if err == nil && rec.State == st {
			return nil
		}
		if err == nil && rec.State.Terminal() {
			return fmt.Errorf("job %s ended %s before it was %s", id, rec.State, st)
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// WriteResizeTable prints each step's two parts and their sum.
func WriteResizeTable(w io.Writer, steps []ResizeStep) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "change\tcheckpoint and stop\trestart to running\ttotal\t")
	for _, s := range steps {
		fmt.Fprintf(tw, "%s\t%.2f s\t%.2f s\t%.2f s\t\n", s.What, s.Stop.Seconds(), s.Restart.Seconds(), (s.Stop + s.Restart).Seconds())
	}
	return tw.Flush()
}
