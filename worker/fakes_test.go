package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/zorilla-p2p/zorilla/mpi/router"
	"github.com/zorilla-p2p/zorilla/worker/proc"
)

// fakeRunner is a proc.Runner whose processes are fakeProcs: a test ends
// each with the exit it wants. Start refuses a program that was not
// staged, and its ctx ends the process as the real runner's does.
type fakeRunner struct {
	started chan *fakeProc
	next    atomic.Int64
}

func newFakeRunner() *fakeRunner { return &fakeRunner{started: make(chan *fakeProc, 64)} }

func (f *fakeRunner) Start(ctx context.Context, s proc.Spec, out proc.OutputFunc) (proc.Process, error) {
	if _, err := os.Stat(s.Program); err != nil {
		return nil, fmt.Errorf("fake runner: program not staged: %w", err)
	}
	if fi, err := os.Stat(s.Dir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("fake runner: no working folder %s: %v", s.Dir, err)
	}
	// Far above any pid_max: a signal sent to it by mistake reaches nobody.
	p := &fakeProc{spec: s, out: out, pid: 1<<30 + int(f.next.Add(1)), done: make(chan struct{})}
	go func() {
		select {
		case <-ctx.Done():
			_ = p.Kill()
		case <-p.done:
		}
	}()
	f.started <- p
	return p, nil
}

// NewSandbox makes an empty sandbox: no user, cgroup or namespace.
func (f *fakeRunner) NewSandbox(string, proc.Resources) (*proc.Sandbox, error) {
	return &proc.Sandbox{}, nil
}

func (f *fakeRunner) Isolation() proc.Isolation { return proc.Isolation{} }
func (f *fakeRunner) Close() error              { return nil }

// fakeProc is one process of a fakeRunner.
type fakeProc struct {
	spec proc.Spec
	out  proc.OutputFunc
	pid  int

	once   sync.Once
	done   chan struct{}
	exit   proc.Exit
	killed atomic.Bool
}

// end makes the process exit with x, unless it ended already.
func (p *fakeProc) end(x proc.Exit) {
	p.once.Do(func() {
		p.exit = x
		close(p.done)
	})
}

func (p *fakeProc) Pid() int { return p.pid }

func (p *fakeProc) Wait() proc.Exit {
	<-p.done
	return p.exit
}

func (p *fakeProc) Kill() error {
	p.killed.Store(true)
	p.end(proc.Exit{Code: 128 + 15, Signal: "SIGTERM", Killed: true})
	return nil
}

func (p *fakeProc) Done() <-chan struct{} { return p.done }

// fakeMPI is an MPI router that routes nothing: a test says when a job's
// copies are all in Init, and sees what the worker asks of the job.
type fakeMPI struct {
	added chan *fakeMPIJob

	mu   sync.Mutex
	jobs map[string]*fakeMPIJob
}

func newFakeMPI() *fakeMPI {
	return &fakeMPI{added: make(chan *fakeMPIJob, 64), jobs: map[string]*fakeMPIJob{}}
}

func (m *fakeMPI) Socket() string { return "/nonexistent/mpi.sock" }

func (m *fakeMPI) AddJob(spec router.JobSpec) (MPIJob, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.jobs[spec.ID] != nil {
		return nil, fmt.Errorf("%w: %s", router.ErrJobExists, spec.ID)
	}
	j := &fakeMPIJob{spec: spec, ready: make(chan struct{}), events: make(chan router.Event, 8),
		released: make(chan struct{}), removed: make(chan struct{})}
	m.jobs[spec.ID] = j
	m.added <- j
	return j, nil
}

func (m *fakeMPI) RemoveJob(id string) {
	m.mu.Lock()
	j := m.jobs[id]
	delete(m.jobs, id)
	m.mu.Unlock()
	if j != nil {
		j.remove()
	}
}

// fakeMPIJob is one job of a fakeMPI.
type fakeMPIJob struct {
	spec     router.JobSpec
	ready    chan struct{}
	events   chan router.Event
	released chan struct{}
	removed  chan struct{}

	checkpoints atomic.Int32 // CheckpointNow calls that reached rank 0

	mu      sync.Mutex
	err     *router.Failure
	left    string
	relOnce sync.Once
	rmOnce  sync.Once
}

func (j *fakeMPIJob) InitReady() <-chan struct{}  { return j.ready }
func (j *fakeMPIJob) Events() <-chan router.Event { return j.events }

func (j *fakeMPIJob) Err() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err == nil {
		return nil
	}
	return j.err
}

// CheckpointNow asks rank 0, when it runs here.
func (j *fakeMPIJob) CheckpointNow() bool {
	for _, p := range j.spec.Local {
		if p.Rank == 0 {
			j.checkpoints.Add(1)
			return true
		}
	}
	return false
}

func (j *fakeMPIJob) Release() { j.relOnce.Do(func() { close(j.released) }) }

func (j *fakeMPIJob) Fail(err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err == nil {
		j.err = &router.Failure{Rank: -1, Reason: err.Error()}
	}
}

func (j *fakeMPIJob) Leave(why string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.left = why
}

func (j *fakeMPIJob) remove() {
	j.rmOnce.Do(func() {
		close(j.events)
		close(j.removed)
	})
}

// failure is what Fail recorded, or nil.
func (j *fakeMPIJob) failure() *router.Failure {
	var f *router.Failure
	if errors.As(j.Err(), &f) {
		return f
	}
	return nil
}
