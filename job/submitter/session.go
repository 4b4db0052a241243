package submitter

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zorilla-p2p/zorilla/internal/blob"
	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/lifecycle"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// inputQueue bounds the events waiting for a session's loop. Report
// streams and offers wait when it is full; declines are dropped.
const inputQueue = 256

// item is an event on its way to the loop. Taken, when set, is closed once
// the machine has taken the event: a worker waits for the answer to its
// RepDone and RepLeaving. A stream's end is taken only while its stream
// is the host's current one.
type item struct {
	ev     lifecycle.Event
	taken  chan struct{}
	stream uint64
}

// session is one job on its submitter: its lifecycle machine, which the
// run goroutine alone steps, and the executor of the machine's effects.
// Effects that talk to the network run on goroutines of their own and
// come back as events, so that nothing the machine asked for ever holds
// up the next event.
type session struct {
	s   *Submitter
	id  job.ID
	key job.Key
	own map[string]bool    // the hashes of the job's program and inputs
	m   *lifecycle.Machine // owned by run

	inputs chan item
	ctx    context.Context
	stop   context.CancelFunc
	ended  chan struct{} // closed when run returns

	// takingOffers mirrors m.TakesOffers() after each step: an offer that
	// comes at another time is refused before its sender is measured.
	takingOffers atomic.Bool
	tokens       atomic.Uint64

	mu      sync.Mutex // guards offers and stops
	offers  map[uint64]chan proto.OfferReply
	stops   map[uint64]chan error
	reports reportStates // what each host's report stream needs to know
	grants  grants       // checkpoint files the hosts may fetch

	// Owned by run.
	journal *journal
	feed    *feed
	files   map[string]*os.File // the job folder's stdout and stderr
	ckw     *ckptWriter         // writes the checkpoint files arriving; nil until the first chunk
}

// newSession makes the session of a job, not yet running.
func (s *Submitter) newSession(st lifecycle.Start) (*session, error) {
	j, err := openJournal(s.store.Dir(st.Record.ID))
	if err != nil {
		return nil, fmt.Errorf("job %s: %w", st.Record.ID, err)
	}
	ctx, stop := context.WithCancel(s.ctx)
	own := map[string]bool{}
	for _, f := range st.Record.Inputs {
		own[f.Hash] = true
	}
	if st.Record.Program != nil {
		own[st.Record.Program.Hash] = true
	}
	return &session{s: s, id: st.Record.ID, key: st.Record.Key, own: own, m: lifecycle.New(s.cfg.Config, s.env(), st),
		inputs: make(chan item, inputQueue), ctx: ctx, stop: stop, ended: make(chan struct{}),
		offers: map[uint64]chan proto.OfferReply{}, stops: map[uint64]chan error{},
		journal: j, feed: newFeed(s.cfg.MaxOutputLines), files: map[string]*os.File{}}, nil
}

// run steps the machine from its first event until it is over: events as
// they come, a Tick when its next timer is due, Shutdown when the agent
// stops.
func (ss *session) run(first lifecycle.Event) {
	defer close(ss.ended)
	defer ss.stop()
	defer ss.pinFiles()()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	shutdown := ss.s.ctx.Done()
	ss.step(item{ev: first})
	for !ss.m.Ended() {
		armed := ss.arm(timer)
		select {
		case in := <-ss.inputs:
			ss.step(in)
		case <-armed:
			ss.step(item{ev: lifecycle.Tick{}})
		case <-ss.checkpointsReady():
			ss.step(item{ev: lifecycle.CheckpointFiles{Files: ss.ckw.take()}})
		case <-shutdown:
			shutdown = nil
			ss.step(item{ev: lifecycle.Shutdown{}})
		}
	}
}

// arm sets the timer to the machine's next deadline and returns its
// channel; nil when no timer is armed.
func (ss *session) arm(t *time.Timer) <-chan time.Time {
	at, ok := ss.m.Deadline()
	if !ok {
		return nil
	}
	if !t.Stop() {
		select {
		case <-t.C:
		default:
		}
	}
	t.Reset(max(0, time.Until(at)))
	return t.C
}

// step feeds one event to the machine, with the time and what the agent
// knows then, and carries out its effects.
func (ss *session) step(in item) {
	defer func() {
		if in.taken != nil {
			close(in.taken)
		}
	}()
	if e, ok := in.ev.(lifecycle.StreamEnded); ok && !ss.reports.current(e.Lease, in.stream) {
		return // the worker opened a new stream meanwhile
	}
	input := lifecycle.Input{Now: time.Now(), Event: in.ev}
	if k, ok := ss.s.ping.(Knower); ok && !ss.m.Watching() {
		input.Known = k.Known()
	}
	if _, tick := in.ev.(lifecycle.Tick); tick && ss.m.Watching() {
		input.Heard = ss.reports.heard()
	}
	effects := ss.m.Step(input)
	// Before the effects: the flood they may send out must find the job
	// taking offers.
	ss.takingOffers.Store(ss.m.TakesOffers())
	for _, e := range effects {
		ss.do(e)
	}
}

// send hands an event to the loop, waiting while the queue is full; false
// when the session ended first.
func (ss *session) send(ev lifecycle.Event) bool {
	select {
	case ss.inputs <- item{ev: ev}:
		return true
	case <-ss.ended:
		return false
	}
}

// trySend hands an event to the loop unless the queue is full.
func (ss *session) trySend(ev lifecycle.Event) {
	select {
	case ss.inputs <- item{ev: ev}:
	default:
	}
}

// offer hands a measured offer to the machine and waits for its answer.
func (ss *session) offer(o lifecycle.Offer) proto.OfferReply {
	reply := make(chan proto.OfferReply, 1)
	ss.mu.Lock()
	ss.offers[o.Token] = reply
	ss.mu.Unlock()
	if !ss.send(o) {
		return proto.OfferReply{Reason: "job ended"}
	}
	select {
	case r := <-reply:
		return r
	case <-ss.ended:
		return proto.OfferReply{Reason: "job ended"}
	}
}

// stopAt asks the machine for a stop at the next checkpoint and waits for
// its answer, or ctx.
func (ss *session) stopAt(ctx context.Context, timeout time.Duration, by *lifecycle.PreemptBy) error {
	err := ss.ask(ctx, func(token uint64) lifecycle.Event {
		return lifecycle.Stop{Token: token, Timeout: timeout, By: by}
	})
	if err != nil {
		return err
	}
	// The machine answers just before it ends; the session leaves the
	// running set a moment later. Wait for that, so that a resume that
	// follows (a swap, or the user's) finds the job stopped, not still here.
	select {
	case <-ss.ended:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("job %s stopped but still closing (%w)", ss.id, ctx.Err())
	}
}

// giveWay asks the machine whether the job gives way as w asks; it says
// at once.
func (ss *session) giveWay(ctx context.Context, w lifecycle.GiveWay) error {
	return ss.ask(ctx, func(token uint64) lifecycle.Event {
		w.Token = token
		return w
	})
}

// ask feeds the event ev makes of a fresh token, and waits for the
// machine's answer under that token (AnswerStop, AnswerGiveWay).
func (ss *session) ask(ctx context.Context, ev func(token uint64) lifecycle.Event) error {
	token := ss.tokens.Add(1)
	reply := make(chan error, 1)
	ss.mu.Lock()
	ss.stops[token] = reply
	ss.mu.Unlock()
	select {
	case ss.inputs <- item{ev: ev(token)}:
	case <-ss.ended:
		return fmt.Errorf("%w: job %s ended meanwhile", job.ErrNotStoppable, ss.id)
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-reply:
		return err
	case <-ss.ended:
		return fmt.Errorf("%w: job %s ended meanwhile", job.ErrNotStoppable, ss.id)
	case <-ctx.Done():
		return fmt.Errorf("job %s: no answer to the stop yet (%w); see `zorilla status`", ss.id, ctx.Err())
	}
}

// answer delivers an answer to the request waiting under token.
func answer[T any](mu *sync.Mutex, waiting map[uint64]chan T, token uint64, v T) {
	mu.Lock()
	ch := waiting[token]
	delete(waiting, token)
	mu.Unlock()
	if ch != nil {
		ch <- v
	}
}

// checkpointsReady is where the writer says it finished files: nil while
// the session has no writer.
func (ss *session) checkpointsReady() <-chan struct{} {
	if ss.ckw == nil {
		return nil
	}
	return ss.ckw.ready
}

// noticeUpdate is a line of the submitter's own for the job's watchers.
func noticeUpdate(line string) job.Update {
	return job.Update{Kind: "output", Rank: -1, Stream: "stderr", Line: line}
}

// grants are the checkpoint files (by hash) the job's hosts may fetch from
// the submitter; the loop sets them, fetch handlers read them.
type grants struct {
	mu sync.Mutex
	h  map[string]bool
}

func (g *grants) set(hashes []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.h = map[string]bool{}
	for _, h := range hashes {
		g.h[h] = true
	}
}

func (g *grants) has(h string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.h[h]
}

// pinFiles keeps the job's program and inputs in the agent's blob store
// while the session runs, and returns what ends that: the agent's worker,
// which removes the files it fetched for its own jobs, shares the store.
func (ss *session) pinFiles() (unpin func()) {
	rec := ss.m.Record()
	var hs []blob.Hash
	for _, f := range rec.Inputs {
		if h, err := blob.ParseHash(f.Hash); err == nil {
			hs = append(hs, h)
		}
	}
	if rec.Program != nil {
		if h, err := blob.ParseHash(rec.Program.Hash); err == nil {
			hs = append(hs, h)
		}
	}
	for _, h := range hs {
		ss.s.blobs.Pin(h)
	}
	return func() {
		for _, h := range hs {
			ss.s.blobs.Unpin(h)
		}
	}
}
