package submitter

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	logging "github.com/ipfs/go-log/v2"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/flood"
	"github.com/zorilla-p2p/zorilla/internal/blob"
	"github.com/zorilla-p2p/zorilla/internal/rpc"
	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/lifecycle"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

var log = logging.Logger("zorilla/submitter")

// Advertiser floods a job's advert with a given radius; flood.Flooder
// satisfies it. One that is also a Director can send it straight to a few
// peers.
type Advertiser interface {
	Flood(ctx context.Context, a flood.Advert, radius int) error
	MaxTTL() int
}

// Director sends an advert straight to a few peers, each as a flood's last
// hop (flood.Flooder.Direct).
type Director interface {
	Direct(ctx context.Context, a flood.Advert, to []peer.ID) error
}

// Pinger measures the round-trip time to a peer at the application level.
type Pinger interface {
	Ping(ctx context.Context, p peer.ID) (time.Duration, error)
}

// Knower is a Pinger that also lists the peers its agent's overlay knows
// (not itself): with it a job knows when its flood has been answered by
// every peer it knows of (lifecycle.Env.KnowsPeers).
type Knower interface {
	Known() []job.PeerRTT
}

// Config configures the submitter side of an agent: the life of its jobs
// (lifecycle.Config, whose fields it carries) and what it keeps of them.
type Config struct {
	lifecycle.Config
	// MaxOutputLines bounds the output kept in memory for late watchers;
	// all of it is on disk in the job folder. 10,000 lines: a watcher
	// that comes late still reads the start of a long job.
	MaxOutputLines int
}

// DefaultConfig returns the settings of a real agent.
func DefaultConfig() Config {
	return Config{Config: lifecycle.DefaultConfig(), MaxOutputLines: 10000}
}

// Submission is a validated job whose program and inputs are in the blob store.
type Submission struct {
	Desc    job.Description
	Program proto.FileRef
	Inputs  []proto.FileRef
	DryRun  bool // list-match only: flood, collect offers, cancel them all
}

// Submitter is the submitter side of an agent: it runs one session per job
// it submits (a lifecycle machine and the executor of its effects) and
// serves the offer, decline, report, fetch and preempt protocols to
// workers.
type Submitter struct {
	cfg   Config
	h     host.Host
	ep    *rpc.Endpoint
	flood Advertiser
	ping  Pinger
	blobs *blob.Store
	ckpt  *ckptBlobs // which jobs' checkpoints hold which blobs
	store *job.Store

	wholeServed atomic.Int64 // bytes sent on FetchProtocol

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex // guards sessions and finished
	sessions map[job.ID]*session
	finished []*session // the last ended sessions, for late watchers
}

// New builds the submitter side and registers its protocols on ep.
//
// Jobs left running by an agent that stopped are re-attached: their hosts
// kept them running for a grace period and send again what the job's
// journal lacks. Jobs left waiting, reserving or starting are marked
// failed with job.ReasonRestarted: their start cannot be known, and a job
// is never run twice.
func New(h host.Host, ep *rpc.Endpoint, cfg Config, adv Advertiser, ping Pinger, blobs *blob.Store, store *job.Store) (*Submitter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.MaxOutputLines < 1 {
		return nil, fmt.Errorf("submitter: MaxOutputLines must be at least 1, got %d", cfg.MaxOutputLines)
	}
	resumed, problems := failInterrupted(store, time.Now())
	for _, err := range problems {
		log.Warnw("job record not marked failed after a restart", "err", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Submitter{cfg: cfg, h: h, ep: ep, flood: adv, ping: ping, blobs: blobs, ckpt: newCkptBlobs(blobs), store: store,
		ctx: ctx, cancel: cancel, sessions: map[job.ID]*session{}}
	for _, rec := range resumed {
		if err := s.reattach(rec); err != nil {
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

// failInterrupted marks every job of store that is not over and cannot be
// re-attached as failed with job.ReasonRestarted (and a non-zero exit
// status). It returns the jobs to re-attach, and what it could not read or
// update.
func failInterrupted(store *job.Store, now time.Time) (resume []job.Record, problems []error) {
	recs, problems := store.List()
	for _, rec := range recs {
		if rec.State.Terminal() {
			continue
		}
		if rec.State == job.Running && rec.Plan != nil && rec.Program != nil {
			resume = append(resume, rec)
			continue
		}
		next, err := job.Transition(rec, job.Failed, now, job.ReasonRestarted)
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

// env is what a job's machine knows of this agent.
func (s *Submitter) env() lifecycle.Env {
	env := lifecycle.Env{Self: s.h.ID(), FloodLimit: s.cfg.Schedule.Limit(flood.HardMaxTTL)}
	if s.flood != nil {
		env.FloodLimit = s.cfg.Schedule.Limit(s.flood.MaxTTL())
	}
	if _, ok := s.ping.(Knower); ok {
		env.KnowsPeers = true
	}
	if _, ok := s.flood.(Director); ok {
		env.DirectLimit = max(0, min(s.cfg.Direct, flood.MaxDirect))
	}
	return env
}

// Submit starts a job and returns its ID; the job runs in the background.
func (s *Submitter) Submit(sub Submission) (job.ID, error) {
	if err := sub.Desc.Validate(); err != nil {
		return "", err
	}
	for _, f := range append([]proto.FileRef{sub.Program}, sub.Inputs...) {
		if err := job.PlainFileName(f.Name); err != nil {
			return "", fmt.Errorf("job: %w", err)
		}
		h, err := blob.ParseHash(f.Hash)
		if err != nil || !s.blobs.Has(h) {
			return "", fmt.Errorf("job: file %s (%s) is not uploaded to this agent", f.Name, f.Hash)
		}
	}
	rec := job.NewRecord(proto.NewJobID(), job.NewKey(), sub.Desc, time.Now())
	rec.DryRun = sub.DryRun
	rec.Program, rec.Inputs = &sub.Program, sub.Inputs
	if err := os.MkdirAll(s.store.Dir(rec.ID), 0o700); err != nil {
		return "", fmt.Errorf("job: job folder: %w", err)
	}
	if err := s.store.Put(rec); err != nil {
		return "", fmt.Errorf("job: save record: %w", err)
	}
	ss, err := s.newSession(lifecycle.Start{Record: rec})
	if err != nil {
		return "", err
	}
	s.launch(ss, lifecycle.Begin{})
	return rec.ID, nil
}

// launch registers a session and runs it in the background from its
// first event.
func (s *Submitter) launch(ss *session, first lifecycle.Event) {
	s.mu.Lock()
	s.sessions[ss.id] = ss
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ss.run(first)
	}()
}

// Cancel ends a job everywhere.
func (s *Submitter) Cancel(id job.ID, why string) error {
	ss := s.session(id)
	if ss == nil && s.cancelStopped(id, why) {
		return nil
	}
	if ss == nil {
		return fmt.Errorf("%w: %s is not running on this agent", job.ErrUnknownJob, id)
	}
	ss.send(lifecycle.Cancel{Why: why})
	return nil
}

func (s *Submitter) session(id job.ID) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[id]
}

// Close cancels every job this submitter runs (a running one is left to
// its hosts, and taken back when the agent starts again) and waits for
// their sessions.
func (s *Submitter) Close() error {
	s.cancel()
	s.wg.Wait()
	return nil
}

// finishedKept is how many ended sessions stay in memory, so that a watcher
// arriving just after the end still reads the output.
const finishedKept = 64

// forget moves an ended session out of the running set.
func (s *Submitter) forget(id job.ID) {
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
func (s *Submitter) feedOf(id job.ID) *feed {
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
func (s *Submitter) Watch(ctx context.Context, id job.ID, cursor int, fn func(job.Update) error) error {
	f := s.feedOf(id)
	if f == nil {
		rec, err := s.Get(id)
		if err != nil {
			return err
		}
		return fn(job.Update{Kind: "end", State: rec.State, Record: &rec})
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
func (s *Submitter) Get(id job.ID) (job.Record, error) {
	rec, err := s.store.Get(id)
	if err != nil {
		return job.Record{}, fmt.Errorf("%w: %s: %v", job.ErrUnknownJob, id, err)
	}
	return rec, nil
}

// List returns the records of every job submitted through this agent.
func (s *Submitter) List() ([]job.Record, error) {
	recs, problems := s.store.List()
	for _, err := range problems {
		log.Warnw("job record skipped", "err", err)
	}
	return recs, nil
}

// errClosed is what a request to a session that has ended gets.
var errClosed = errors.New("job: session ended")
