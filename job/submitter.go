package job

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/flood"
	"github.com/zorilla-p2p/zorilla/internal/blob"
	"github.com/zorilla-p2p/zorilla/internal/rpc"
	"github.com/zorilla-p2p/zorilla/internal/wire"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// ErrUnknownJob is returned for a job this submitter does not hold.
var ErrUnknownJob = errors.New("job: unknown job")

// Advertiser floods a job's advert with a growing radius, steered by the
// offers (Steered), and one radius more when it is worth it (Flood);
// flood.Flooder satisfies it.
type Advertiser interface {
	Steered(ctx context.Context, a flood.Advert, st flood.Steer, s flood.Schedule) error
	Flood(ctx context.Context, a flood.Advert, radius int) error
}

// Pinger measures the round-trip time to a peer at the application level.
type Pinger interface {
	Ping(ctx context.Context, p peer.ID) (time.Duration, error)
}

// SubmitterConfig configures the submitter side of an agent.
type SubmitterConfig struct {
	// Schedule is the flood's growing radius (Zorilla: 1 s, doubling), with
	// one extra radius flooded at once when the offers are enough.
	Schedule flood.Schedule
	// OfferGrace is how long to keep collecting offers once the job is
	// feasible, so that closer hosts and spares (overbooking) can still come in.
	OfferGrace time.Duration
	// AnswerGap is how long without a new offer or decline (and with no
	// offer still being measured) counts as a radius answered: the flood
	// then moves on at once rather than at the end of the schedule's wait.
	// Zero means 150 ms: answers to one radius come in within a few RTTs
	// of each other, and a gap too short only floods the next radius a
	// little early.
	AnswerGap time.Duration
	// Direct is how many peers its overlay knows, and that have not
	// answered a radius, a job sends its advert to directly rather than
	// flood the next radius, which every agent already reached would
	// forward again to all its neighbours (at most flood.MaxDirect; 0:
	// always flood). Default 16: past that many, a radius is worth its
	// messages.
	Direct int
	// Spares is how many unused offers, beyond the plan, stay reserved until
	// the job runs, to replace hosts that fail the commit.
	Spares int
	// Deadline is the default scheduling deadline: a job not placed by then
	// fails with "not enough resources".
	Deadline time.Duration
	// StartTimeout bounds phase one: every host reports its processes started.
	StartTimeout time.Duration
	// InitTimeout bounds phase two once any rank is in mpi.Init.
	InitTimeout time.Duration
	// LostAfter declares a host lost after this much silence on its event stream.
	LostAfter time.Duration
	// Retry bounds starts per match and matches per job.
	Retry RetryPolicy
	// Unavailable is how long a host that failed a start is not used again.
	Unavailable time.Duration
	// MaxOutputLines bounds the output kept in memory for late watchers;
	// all of it is on disk in the job folder.
	MaxOutputLines int
}

// DefaultSubmitterConfig returns the settings of a real agent.
func DefaultSubmitterConfig() SubmitterConfig {
	return SubmitterConfig{
		Schedule:       flood.Schedule{First: time.Second, Factor: 2, MaxRadius: 8, Extra: 1},
		OfferGrace:     300 * time.Millisecond,
		AnswerGap:      defaultAnswerGap,
		Direct:         defaultDirect,
		Spares:         2,
		Deadline:       2 * time.Minute,
		StartTimeout:   60 * time.Second,
		InitTimeout:    60 * time.Second,
		LostAfter:      10 * time.Second,
		Retry:          DefaultRetryPolicy(),
		Unavailable:    5 * time.Minute,
		MaxOutputLines: 10000,
	}
}

// Submission is a validated job whose program and inputs are in the blob store.
type Submission struct {
	Desc    Description
	Program proto.FileRef
	Inputs  []proto.FileRef
	DryRun  bool // list-match only: flood, collect offers, cancel them all
}

// Submitter is the submitter side of an agent: it runs one session per job
// it submits and serves the offer, event and fetch protocols to workers.
type Submitter struct {
	cfg   SubmitterConfig
	h     host.Host
	ep    *rpc.Endpoint
	flood Advertiser
	ping  Pinger
	blobs *blob.Store
	ckpt  *ckptBlobs // which jobs' checkpoints hold which blobs

	wholeServed atomic.Int64 // bytes sent on FetchProtocol
	store       *Store

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex // guards sessions and finished
	sessions map[ID]*session
	finished []*session // the last ended sessions, for late watchers
}

// NewSubmitter builds the submitter side and registers its protocols on ep.
//
// Jobs left running by an agent that stopped are re-attached: their hosts
// kept them running for a grace period and send again what the job's
// journal lacks. Jobs left waiting, reserving or starting are marked failed
// with ReasonRestarted: their start cannot be known, and a job is never
// run twice.
func NewSubmitter(h host.Host, ep *rpc.Endpoint, cfg SubmitterConfig, adv Advertiser, ping Pinger, blobs *blob.Store, store *Store) (*Submitter, error) {
	resumed, problems := failInterrupted(store, time.Now())
	for _, err := range problems {
		log.Warnw("job record not marked failed after a restart", "err", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Submitter{cfg: cfg, h: h, ep: ep, flood: adv, ping: ping, blobs: blobs, ckpt: newCkptBlobs(blobs), store: store,
		ctx: ctx, cancel: cancel, sessions: map[ID]*session{}}
	for _, rec := range resumed {
		if err := s.resume(rec); err != nil {
			log.Warnw("job not re-attached after a restart", "job", rec.ID, "err", err)
		}
	}
	ep.Handle(proto.OfferProtocol, s.handleOffer)
	ep.Handle(proto.ReportProtocol, s.handleReports)
	ep.Handle(proto.FetchProtocol, s.handleFetch)
	ep.Handle(proto.DeclineProtocol, s.handleDecline)
	ep.Handle(proto.PreemptProtocol, s.handlePreempt)
	return s, nil
}

// ReasonRestarted is the reason given to jobs that were not over when
// their submitter's agent stopped.
const ReasonRestarted = "agent restarted"

// failInterrupted marks every job of store that is not over and cannot be
// re-attached as failed with ReasonRestarted (and a non-zero exit status).
// It returns the jobs to re-attach, and what it could not read or update.
func failInterrupted(store *Store, now time.Time) (resume []Record, problems []error) {
	recs, problems := store.List()
	for _, rec := range recs {
		if rec.State.Terminal() {
			continue
		}
		if rec.State == Running && rec.Plan != nil && rec.Program != nil {
			resume = append(resume, rec)
			continue
		}
		next, err := Transition(rec, Failed, now, ReasonRestarted)
		if err == nil {
			next.Exit = max(next.Exit, 1)
			err = store.Put(next)
		}
		if err != nil {
			problems = append(problems, fmt.Errorf("job %s: %w", rec.ID, err))
		}
	}
	return resume, problems
}

// Submit starts a job and returns its ID; the job runs in the background.
func (s *Submitter) Submit(sub Submission) (ID, error) {
	if err := sub.Desc.Validate(); err != nil {
		return "", err
	}
	for _, f := range append([]proto.FileRef{sub.Program}, sub.Inputs...) {
		if err := plainFileName(f.Name); err != nil {
			return "", fmt.Errorf("job: %w", err)
		}
		h, err := blob.ParseHash(f.Hash)
		if err != nil || !s.blobs.Has(h) {
			return "", fmt.Errorf("job: file %s (%s) is not uploaded to this agent", f.Name, f.Hash)
		}
	}
	ss := s.newSession(proto.NewJobID(), NewKey(), sub)
	stop := ss.stop
	ss.rec = NewRecord(ss.id, ss.key, sub.Desc, time.Now())
	ss.rec.DryRun = sub.DryRun
	ss.rec.Program, ss.rec.Inputs = &sub.Program, sub.Inputs
	if err := os.MkdirAll(s.store.Dir(ss.id), 0o700); err != nil {
		stop()
		return "", fmt.Errorf("job: job folder: %w", err)
	}
	j, err := openJournal(s.store.Dir(ss.id))
	if err != nil {
		stop()
		return "", fmt.Errorf("job: %w", err)
	}
	ss.journal = j
	if err := s.store.Put(ss.rec); err != nil {
		stop()
		return "", fmt.Errorf("job: save record: %w", err)
	}
	s.launch(ss, false)
	return ss.id, nil
}

// launch registers a session and runs it in the background (resumed: a
// job re-attached after this agent restarted).
func (s *Submitter) launch(ss *session, resumed bool) {
	s.mu.Lock()
	s.sessions[ss.id] = ss
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ss.run(resumed)
	}()
}

// newSession makes the session of a job, not yet running.
func (s *Submitter) newSession(id ID, key Key, sub Submission) *session {
	ctx, stop := context.WithCancel(s.ctx)
	return &session{s: s, id: id, key: key, sub: sub,
		offers: make(chan offerIn), arrivals: make(chan peer.ID, declineQueue), declines: make(chan declineIn, declineQueue), events: make(chan reportIn, 64), cancel: make(chan string, 1),
		stopReq: make(chan stopReq),
		ctx:     ctx, stop: stop, avoid: map[peer.ID]time.Time{},
		feed: newFeed(s.cfg.MaxOutputLines), files: map[string]*os.File{}, outputs: map[string]string{}}
}

// Cancel ends a job everywhere.
func (s *Submitter) Cancel(id ID, why string) error {
	ss := s.session(id)
	if ss == nil && s.cancelStopped(id, why) {
		return nil
	}
	if ss == nil {
		return fmt.Errorf("%w: %s is not running on this agent", ErrUnknownJob, id)
	}
	select {
	case ss.cancel <- why:
	default: // a cancel is already on its way
	}
	return nil
}

func (s *Submitter) session(id ID) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[id]
}

// lease sends one lease request and checks the worker's answer.
func (s *Submitter) lease(ctx context.Context, to peer.ID, req proto.LeaseRequest) (proto.LeaseReply, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var rep proto.LeaseReply
	if err := s.ep.Call(ctx, to, proto.LeaseProtocol, req, &rep, proto.MaxReplySize); err != nil {
		return rep, err
	}
	if !rep.OK {
		return rep, fmt.Errorf("%s refused: %s", req.Op, rep.Error)
	}
	return rep, nil
}

// offerHandoff bounds the wait of an offer for the session's run loop:
// under the worker's 10 s call and the stream's deadline, so that the
// answer still reaches it.
const offerHandoff = 8 * time.Second

// handoffPoll is how often a waiting offer looks whether its job is
// still reserving.
const handoffPoll = 250 * time.Millisecond

// handOffer gives an offer to the session's run loop and returns its
// answer. It waits as long as the job is reserving (ctx bounds it): on a
// loaded machine the loop may take seconds to get to it, and an offer
// refused for that was an answer lost (traced on the full-size Grid'5000
// simulation: the worker gave its slots back, was not heard, and only a
// wider radius flooded again brought its offer back, which called for
// yet another radius). A job that has stopped reserving refuses it at
// the next poll, so the worker frees its slots at once.
func (ss *session) handOffer(ctx context.Context, in offerIn, poll <-chan time.Time) proto.OfferReply {
	for {
		select {
		case ss.offers <- in:
			return <-in.reply
		case <-ss.ctx.Done():
			return proto.OfferReply{Reason: "job ended"}
		case <-ctx.Done():
			return proto.OfferReply{Reason: "the job's submitter is too busy to take the offer"}
		case <-poll:
			if !ss.reserving.Load() {
				return proto.OfferReply{Reason: "job no longer reserving"}
			}
		}
	}
}

// arrived tells the run loop that from's offer has reached the
// submitter, before its sender is measured: from has answered the flood.
// A full queue drops the news (the offer itself tells it later).
func (ss *session) arrived(from peer.ID) {
	select {
	case ss.arrivals <- from:
	default:
	}
}

// declineQueue bounds the declines waiting for a session's run loop; more
// are dropped (the tally is advice, not accounting).
const declineQueue = 256

// handleDecline counts a worker's decline for its job's session. A decline
// for a job not reserving here, or one that does not parse, is dropped.
func (s *Submitter) handleDecline(_ context.Context, from peer.ID, st rpc.Stream) {
	_ = st.SetDeadline(time.Now().Add(5 * time.Second))
	var msg proto.DeclineMsg
	err := wire.ReadJSON(bufio.NewReader(st), proto.MaxDeclineSize, &msg)
	if err == nil {
		err = msg.Validate()
	}
	if err != nil {
		log.Debugw("bad decline", "from", from, "err", err)
		_ = st.Reset()
		return
	}
	_ = st.Close()
	if ss := s.session(msg.Job); ss != nil {
		select {
		case ss.declines <- declineIn{from: from, msg: msg}:
		default:
		}
	}
}

// handleOffer hands a worker's offer to its job's session and answers.
func (s *Submitter) handleOffer(ctx context.Context, from peer.ID, st rpc.Stream) {
	_ = st.SetDeadline(time.Now().Add(10 * time.Second))
	var msg proto.OfferMsg
	if err := wire.ReadJSON(bufio.NewReader(st), proto.MaxOfferSize, &msg); err != nil {
		_ = st.Reset()
		return
	}
	reply := proto.OfferReply{Reason: "no such job is reserving here"}
	if ss := s.session(msg.Job); ss != nil && !ss.reserving.Load() {
		reply.Reason = "job no longer reserving"
	} else if ss != nil && msg.Slots > 0 && msg.Lease != "" {
		ss.pending.Add(1)
		ss.arrived(from)
		rtt := time.Duration(0)
		if from != s.h.ID() {
			pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			d, err := s.ping.Ping(pctx, from)
			cancel()
			if err != nil {
				d = time.Hour // unmeasured: last in rlist
			}
			rtt = d
		}
		in := offerIn{from: from, msg: msg, rtt: rtt, reply: make(chan proto.OfferReply, 1)}
		hctx, cancel := context.WithTimeout(ctx, offerHandoff)
		poll := time.NewTicker(handoffPoll)
		reply = ss.handOffer(hctx, in, poll.C)
		poll.Stop()
		cancel()
		ss.pending.Add(-1)
	}
	if !reply.Keep {
		log.Debugw("offer refused", "job", msg.Job, "from", from, "reason", reply.Reason)
	}
	if err := wire.WriteJSON(st, reply); err != nil {
		_ = st.Reset()
		return
	}
	_ = st.Close()
}

// handleFetch serves one of a job's files to a worker of that job.
func (s *Submitter) handleFetch(ctx context.Context, from peer.ID, st rpc.Stream) {
	_ = st.SetDeadline(time.Now().Add(10 * time.Second))
	var req proto.FetchRequest
	if err := wire.ReadJSON(bufio.NewReader(st), proto.MaxReplySize, &req); err != nil {
		_ = st.Reset()
		return
	}
	f, size, err := s.openJobFile(req)
	if err != nil {
		_ = wire.WriteJSON(st, proto.FetchReply{Error: err.Error()})
		_ = st.Close()
		return
	}
	defer f.Close()
	_ = st.SetDeadline(time.Now().Add(10 * time.Minute))
	if err := wire.WriteJSON(st, proto.FetchReply{Size: size}); err != nil {
		_ = st.Reset()
		return
	}
	n, err := io.Copy(st, f)
	s.wholeServed.Add(n)
	if err != nil {
		_ = st.Reset()
		return
	}
	_ = st.Close()
}

// openJobFile opens a file a worker may fetch: one of the job's own, asked
// for with the job's key.
func (s *Submitter) openJobFile(req proto.FetchRequest) (io.ReadCloser, int64, error) {
	ss := s.session(req.Job)
	if ss == nil || req.Key != string(ss.key) {
		return nil, 0, errors.New("no such job, or wrong key")
	}
	for _, f := range append([]proto.FileRef{ss.sub.Program}, ss.sub.Inputs...) {
		if f.Hash == req.Hash {
			h, err := blob.ParseHash(f.Hash)
			if err != nil {
				return nil, 0, err
			}
			return s.blobs.Open(h)
		}
	}
	if ss.grants.has(req.Hash) { // a checkpoint file of the job (checkpoint.go)
		h, err := blob.ParseHash(req.Hash)
		if err != nil {
			return nil, 0, err
		}
		return s.blobs.Open(h)
	}
	return nil, 0, errors.New("not a file of this job")
}

// Close cancels every job this submitter runs and waits for their sessions.
func (s *Submitter) Close() error {
	s.cancel()
	s.wg.Wait()
	return nil
}

// finishedKept is how many ended sessions stay in memory, so that a watcher
// arriving just after the end still reads the output.
const finishedKept = 64

// forget moves an ended session out of the running set.
func (s *Submitter) forget(id ID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.sessions[id]
	delete(s.sessions, id)
	if ss == nil {
		return
	}
	s.finished = append(s.finished, ss)
	if len(s.finished) > finishedKept {
		s.finished = s.finished[1:]
	}
}

// feedOf finds the feed of a running or recently ended job.
func (s *Submitter) feedOf(id ID) *feed {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss := s.sessions[id]; ss != nil {
		return ss.feed
	}
	for _, ss := range s.finished {
		if ss.id == id {
			return ss.feed
		}
	}
	return nil
}

// Watch calls fn with every update of job id from cursor on, until the job
// ends, ctx ends or fn fails. For a job known only from its record, fn gets
// one "end" update.
func (s *Submitter) Watch(ctx context.Context, id ID, cursor int, fn func(Update) error) error {
	f := s.feedOf(id)
	if f == nil {
		rec, err := s.Get(id)
		if err != nil {
			return err
		}
		return fn(Update{Kind: "end", State: rec.State, Record: &rec})
	}
	for {
		us, next, done, err := f.read(ctx, cursor)
		for _, u := range us {
			if err := fn(u); err != nil {
				return err
			}
		}
		if err != nil || done {
			return err
		}
		cursor = next
	}
}

// Get returns a job's record: live for a running job, else from disk.
func (s *Submitter) Get(id ID) (Record, error) {
	rec, err := s.store.Get(id)
	if err != nil {
		return Record{}, fmt.Errorf("%w: %s: %v", ErrUnknownJob, id, err)
	}
	return rec, nil
}

// List returns the records of every job submitted through this agent.
func (s *Submitter) List() ([]Record, error) {
	recs, problems := s.store.List()
	for _, err := range problems {
		log.Warnw("job record skipped", "err", err)
	}
	return recs, nil
}
