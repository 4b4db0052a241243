package pmi

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// ErrFenceClosed is returned by a Fence's methods once it was closed.
var ErrFenceClosed = errors.New("pmi: job ended")

// DefaultFanout is how many children a host has in a fence's tree: 600
// hosts are 4 levels deep, and no host sends more than 8 copies of a
// merge.
const DefaultFanout = 8

// FenceSpec is one host's part in a job's KVS.
type FenceSpec struct {
	Job   string    // the job's start, as its agents name it
	Key   string    // the job's secret, quoted on every message
	Hosts []peer.ID // every host of the job, the same order on each
	Self  int       // this host's index in Hosts
	Local []int     // the ranks this host runs
	// Fanout is the number of children per host (DefaultFanout if 0).
	Fanout int
}

func (s FenceSpec) validate() error {
	switch {
	case s.Job == "" || s.Key == "":
		return errors.New("pmi: fence needs a job and a key")
	case s.Self < 0 || s.Self >= len(s.Hosts):
		return fmt.Errorf("pmi: host %d of %d", s.Self, len(s.Hosts))
	case len(s.Local) == 0:
		return errors.New("pmi: fence with no local rank")
	case s.Fanout < 0:
		return fmt.Errorf("pmi: fanout %d", s.Fanout)
	}
	return nil
}

// Msg is one step of a barrier between two hosts of a job: up (a
// subtree's puts, to the parent) or down (the merge of every put, to the
// children).
type Msg struct {
	Job   string            `json:"job"`
	Key   string            `json:"key"`
	Epoch int               `json:"epoch"` // barriers completed before this one
	From  int               `json:"from"`  // the sender's index in Hosts
	Down  bool              `json:"down,omitempty"`
	KVS   map[string]string `json:"kvs,omitempty"`
}

// Sender delivers a message to another host of the job.
type Sender func(ctx context.Context, to peer.ID, m Msg) error

// Fence is one host's share of a job's KVS and barriers. Its run
// goroutine owns the state; ranks' connections call Put, Get and
// Barrier, the network calls Deliver.
type Fence struct {
	spec     FenceSpec
	send     Sender
	reqs     chan func(*fenceState)
	ready    chan struct{} // closed when every local rank is in the first barrier
	released chan struct{} // closed by Release
	relOnce  chan struct{}
	ctx      context.Context
	cancel   context.CancelFunc
	done     chan struct{}
}

// fenceState is owned by Fence.run.
type fenceState struct {
	epoch    int
	kvs      map[string]string // merged at the last barrier
	pending  map[string]string // put here, or by the subtree, since
	waiting  map[int]chan error
	children map[int]bool // children whose up message for epoch arrived
	sentUp   bool
	released bool
	err      error // set when the fence failed; every later call gets it
}

// NewFence starts host spec.Self's part of a job's KVS; send carries its
// messages to the other hosts. Close ends it.
func NewFence(spec FenceSpec, send Sender) (*Fence, error) {
	if err := spec.validate(); err != nil {
		return nil, err
	}
	if spec.Fanout == 0 {
		spec.Fanout = DefaultFanout
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &Fence{spec: spec, send: send, reqs: make(chan func(*fenceState)),
		ready: make(chan struct{}), released: make(chan struct{}), relOnce: make(chan struct{}, 1),
		ctx: ctx, cancel: cancel, done: make(chan struct{})}
	f.relOnce <- struct{}{}
	go f.run()
	return f, nil
}

// Ready is closed once every rank of this host has entered the first
// barrier: the host's half of the two-phase start.
func (f *Fence) Ready() <-chan struct{} { return f.ready }

// Release lets the first barrier go on past this host: the submitter saw
// every host ready.
func (f *Fence) Release() {
	select {
	case <-f.relOnce:
		close(f.released)
	default:
	}
}

// Close ends the fence: barriers waiting fail with ErrFenceClosed.
func (f *Fence) Close() {
	f.cancel()
	<-f.done
}

func (f *Fence) run() {
	defer close(f.done)
	st := &fenceState{kvs: map[string]string{}, pending: map[string]string{},
		waiting: map[int]chan error{}, children: map[int]bool{}}
	released := f.released
	for {
		select {
		case fn := <-f.reqs:
			fn(st)
		case <-released:
			released = nil
			st.released = true
		case <-f.ctx.Done():
			for _, c := range st.waiting {
				c <- ErrFenceClosed
			}
			return
		}
		if st.err == nil {
			f.advance(st)
		}
	}
}

// do runs fn on the fence's goroutine.
func (f *Fence) do(ctx context.Context, fn func(*fenceState)) error {
	done := make(chan struct{})
	select {
	case f.reqs <- func(st *fenceState) { fn(st); close(done) }:
	case <-f.ctx.Done():
		return ErrFenceClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	<-done
	return nil
}

// Put implements Job.
func (f *Fence) Put(_ int, key, value string) error {
	var err error
	if e := f.do(f.ctx, func(st *fenceState) {
		if err = st.err; err == nil {
			st.pending[key] = value
		}
	}); e != nil {
		return e
	}
	return err
}

// Get implements Job.
func (f *Fence) Get(key string) (string, bool) {
	var v string
	var ok bool
	_ = f.do(f.ctx, func(st *fenceState) {
		if v, ok = st.kvs[key]; !ok {
			v, ok = st.pending[key]
		}
	})
	return v, ok
}

// Barrier implements Job.
func (f *Fence) Barrier(ctx context.Context, rank int) error {
	c := make(chan error, 1)
	var err error
	if e := f.do(ctx, func(st *fenceState) {
		switch {
		case st.err != nil:
			err = st.err
		case !slices.Contains(f.spec.Local, rank):
			err = fmt.Errorf("pmi: rank %d does not run here", rank)
		case st.waiting[rank] != nil:
			err = fmt.Errorf("pmi: rank %d is in the barrier already", rank)
		default:
			st.waiting[rank] = c
		}
	}); e != nil {
		return e
	}
	if err != nil {
		return err
	}
	select {
	case err := <-c:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Deliver takes a message from another host of the job.
func (f *Fence) Deliver(from peer.ID, m Msg) error {
	var err error
	if e := f.do(f.ctx, func(st *fenceState) { err = f.accept(st, from, m) }); e != nil {
		return e
	}
	return err
}

// accept checks a message against the tree and the epoch and merges it.
func (f *Fence) accept(st *fenceState, from peer.ID, m Msg) error {
	s := f.spec
	if m.From < 0 || m.From >= len(s.Hosts) || s.Hosts[m.From] != from {
		return fmt.Errorf("pmi: message from %s claims to be host %d", from, m.From)
	}
	if m.Epoch != st.epoch {
		return fmt.Errorf("pmi: host %d is at barrier %d, this host at %d", m.From, m.Epoch, st.epoch)
	}
	if m.Down {
		if m.From != parent(s.Self, s.Fanout) || !st.sentUp {
			return fmt.Errorf("pmi: host %d sent a merge it cannot send", m.From)
		}
		f.finish(st, m.KVS)
		return nil
	}
	if !slices.Contains(children(s.Self, s.Fanout, len(s.Hosts)), m.From) || st.children[m.From] {
		return fmt.Errorf("pmi: host %d is not a child waiting here", m.From)
	}
	st.children[m.From] = true
	maps.Copy(st.pending, m.KVS)
	return nil
}

// advance sends this host's merge up when every local rank and every
// child is in the barrier (the first barrier also waits for Release);
// the root sends the merge down at once.
func (f *Fence) advance(st *fenceState) {
	s := f.spec
	if st.sentUp || len(st.waiting) < len(s.Local) {
		return
	}
	if st.epoch == 0 {
		select {
		case <-f.ready:
		default:
			close(f.ready)
		}
		if !st.released {
			return
		}
	}
	if len(st.children) < len(children(s.Self, s.Fanout, len(s.Hosts))) {
		return
	}
	st.sentUp = true
	if s.Self == 0 {
		f.finish(st, st.pending)
		return
	}
	f.post(s.Hosts[parent(s.Self, s.Fanout)], Msg{Epoch: st.epoch, KVS: maps.Clone(st.pending)})
}

// finish ends the barrier here with the merge of every put: commit it,
// pass it down, and let the local ranks go.
func (f *Fence) finish(st *fenceState, merged map[string]string) {
	s := f.spec
	for _, c := range children(s.Self, s.Fanout, len(s.Hosts)) {
		f.post(s.Hosts[c], Msg{Epoch: st.epoch, Down: true, KVS: merged})
	}
	maps.Copy(st.kvs, merged)
	st.pending = map[string]string{}
	st.children = map[int]bool{}
	st.sentUp = false
	st.epoch++
	for r, c := range st.waiting {
		c <- nil
		delete(st.waiting, r)
	}
}

// post sends m in the background, trying again while the other host does
// not know the job yet; a host that cannot be reached fails the fence.
func (f *Fence) post(to peer.ID, m Msg) {
	m.Job, m.Key, m.From = f.spec.Job, f.spec.Key, f.spec.Self
	go func() {
		wait := 10 * time.Millisecond
		for {
			err := f.send(f.ctx, to, m)
			if err == nil || f.ctx.Err() != nil {
				return
			}
			if wait > 5*time.Second {
				f.fail(fmt.Errorf("pmi: barrier %d: host %s: %w", m.Epoch, to, err))
				return
			}
			select {
			case <-time.After(wait):
			case <-f.ctx.Done():
				return
			}
			wait *= 2
		}
	}()
}

// fail ends every barrier, now and later, with err.
func (f *Fence) fail(err error) {
	_ = f.do(f.ctx, func(st *fenceState) {
		if st.err == nil {
			st.err = err
		}
		for r, c := range st.waiting {
			c <- err
			delete(st.waiting, r)
		}
	})
}

// parent is host i's parent in the tree (-1 for the root).
func parent(i, fanout int) int {
	if i == 0 {
		return -1
	}
	return (i - 1) / fanout
}

// children are host i's children among n hosts.
func children(i, fanout, n int) []int {
	var out []int
	for c := fanout*i + 1; c <= fanout*i+fanout && c < n; c++ {
		out = append(out, c)
	}
	return out
}
