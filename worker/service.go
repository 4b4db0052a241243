package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	p2phost "github.com/libp2p/go-libp2p/core/host"

	"github.com/zorilla-p2p/zorilla/internal/blob"
	"github.com/zorilla-p2p/zorilla/internal/chunk"
	"github.com/zorilla-p2p/zorilla/internal/gang"
	"github.com/zorilla-p2p/zorilla/internal/rpc"
	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/worker/pmi"
	"github.com/zorilla-p2p/zorilla/worker/proc"
)

// ErrClosed is returned by a Service after Close.
var ErrClosed = errors.New("worker: closed")

// ServiceConfig configures the worker side of the agent.
type ServiceConfig struct {
	// JobsDir holds one folder per job running here; removed when it ends.
	JobsDir string
	// Heartbeat is how often a worker tells the submitter it is alive; the
	// submitter declares a host lost after a few missed beats.
	Heartbeat time.Duration
	// SubmitterGrace is how long a job's processes run on while its
	// submitter is unreachable (its agent restarting, a connection
	// down): the worker keeps their reports and opens the stream again;
	// after that it ends them.
	SubmitterGrace time.Duration
	// MaxStage bounds one staged program or input file.
	MaxStage int64
	// MaxOutputFile bounds one output file sent back to the submitter.
	MaxOutputFile int64
	// Limits are applied to every process.
	Limits proc.Limits
	// PidsPerProcess bounds the processes and threads of a job's cgroup:
	// this many for each of its processes here.
	PidsPerProcess int64
	// MaxOffersInFlight bounds concurrent offers, so a burst of adverts
	// cannot make the agent open unbounded streams.
	MaxOffersInFlight int
	// DeclineRate and DeclineBurst bound the declines (proto.DeclineMsg) the
	// worker sends, per second, in all; each job is told at most once.
	DeclineRate  float64
	DeclineBurst int
	// Abuse bounds what one submitter can make this worker do.
	Abuse AbuseLimits
	// PeerStaging fetches a job's files in chunks from its other hosts
	// (package chunk), the submitter serving only what none of them has;
	// false fetches each whole file from the submitter. It takes effect
	// once SetChunks gave the worker a chunk service.
	PeerStaging bool
	// Wait bounds the line of adverts declined for lack of free slots,
	// served as the slots free (waitq.go).
	Wait WaitConfig
	// MemorySample is how often the memory the running jobs use is
	// measured (memuse.go); a job is charged the more of that and what it
	// declared. 0: never measured, declarations only.
	MemorySample time.Duration
	// Gang is the time-slice rotation of the jobs that share this host
	// (package gang, gangloop.go); Columns 0 turns it off: jobs sharing
	// the host are co-scheduled by the OS. Every agent of a grid must use
	// the same Slice and Columns.
	Gang gang.Config
}

// DefaultServiceConfig returns the settings of a real agent.
func DefaultServiceConfig() ServiceConfig {
	return ServiceConfig{
		Heartbeat:         2 * time.Second,
		SubmitterGrace:    time.Minute,
		MaxStage:          1 << 30,
		MaxOutputFile:     256 << 20,
		MaxOffersInFlight: 32,
		// 10 a second, 20 at once: a busy network advertises a few jobs a
		// second; a flood of adverts costs at most this many streams.
		DeclineRate:  10,
		DeclineBurst: 20,
		Abuse:        DefaultAbuseLimits(),
		PeerStaging:  true,
		Wait:         DefaultWaitConfig(),
		// 1024 per rank: room for a threaded runtime (Go, OpenMP) and a
		// few helper processes, far from exhausting the machine's PIDs.
		PidsPerProcess: 1024,
		// 2 s: a job's memory grows over seconds as it allocates; reading
		// one cgroup file per job this often costs nothing.
		MemorySample: 2 * time.Second,
	}
}

func (c ServiceConfig) validate() error {
	if c.Gang.Columns != 0 {
		if err := c.Gang.Validate(); err != nil {
			return fmt.Errorf("worker: %w", err)
		}
	}
	switch {
	case c.JobsDir == "":
		return errors.New("worker: jobs dir is not set")
	case c.Heartbeat <= 0:
		return fmt.Errorf("worker: heartbeat must be positive, got %v", c.Heartbeat)
	case c.SubmitterGrace <= 0:
		return fmt.Errorf("worker: submitter grace must be positive, got %v", c.SubmitterGrace)
	case c.MaxStage <= 0 || c.MaxOutputFile <= 0:
		return errors.New("worker: stage and output file limits must be positive")
	case c.MaxOffersInFlight <= 0:
		return errors.New("worker: MaxOffersInFlight must be positive")
	case c.DeclineRate < 0 || c.DeclineBurst < 0:
		return errors.New("worker: DeclineRate and DeclineBurst must not be negative")
	case c.Wait.Max < 1 || c.Wait.Skew < 0 || c.Wait.OfferTimeout <= 0:
		return fmt.Errorf("worker: Wait.Max must be >= 1, Skew >= 0, OfferTimeout > 0; got %d, %v, %v",
			c.Wait.Max, c.Wait.Skew, c.Wait.OfferTimeout)
	case c.MemorySample < 0:
		return fmt.Errorf("worker: MemorySample must not be negative, got %v", c.MemorySample)
	case c.PidsPerProcess < 0:
		return fmt.Errorf("worker: PidsPerProcess must not be negative, got %d", c.PidsPerProcess)
	}
	return c.Abuse.validate()
}

// Service is the worker side of an agent: it answers adverts with offers,
// holds leases, and runs the processes of committed jobs.
type Service struct {
	cfg    ServiceConfig
	h      p2phost.Host
	ep     *rpc.Endpoint
	leases *Leases
	runner proc.Runner
	blobs  *blob.Store
	mpi    MPI
	pmi    *pmi.Network                  // the KVS of the PMI jobs running here
	chunks atomic.Pointer[chunk.Service] // peer-assisted staging; nil: whole files

	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	offers   chan struct{} // semaphore of offers in flight
	declines *decliner
	abuse    *abuse
	staged   stagedBlobs // blobs the running jobs staged, removed after them when fetched
	waiting  *waitLine   // adverts declined for lack of free slots, and the jobs leased here
	copies   copyStore   // checkpoint copies kept for other hosts (checkpoint_copy.go)

	mu   sync.Mutex // guards jobs
	jobs map[proto.JobID]*running

	draining atomic.Bool   // Drain was called: no new job starts
	gangKick chan struct{} // a job joined or left the rotation (gangloop.go)
}

// NewService builds the worker side and registers its protocol on ep.
func NewService(h p2phost.Host, ep *rpc.Endpoint, cfg ServiceConfig, leases *Leases, runner proc.Runner, blobs *blob.Store, mpi MPI) (*Service, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	sweepJobsDir(cfg.JobsDir)
	if err := prepareJobsDir(cfg.JobsDir); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Service{
		cfg: cfg, h: h, ep: ep, runner: runner, blobs: blobs, mpi: mpi,
		leases: leases, ctx: ctx, cancel: cancel,
		offers:   make(chan struct{}, cfg.MaxOffersInFlight),
		declines: newDecliner(cfg.DeclineRate, cfg.DeclineBurst),
		jobs:     map[proto.JobID]*running{},
		abuse:    newAbuse(cfg.Abuse),
		waiting:  newWaitLine(cfg.Wait),
		pmi:      pmi.NewNetwork(ep),
		gangKick: make(chan struct{}, 1),
	}
	ep.Handle(proto.LeaseProtocol, s.handleLease)
	s.wg.Add(1)
	go s.serveWaiting()
	if cfg.MemorySample > 0 {
		s.wg.Add(1)
		go s.sampleMemory()
	}
	if cfg.Gang.Columns > 0 {
		s.wg.Add(1)
		go s.runGang()
	}
	ep.Handle(proto.CopyProtocol, s.handleCopy)
	return s, nil
}

// sweepJobsDir removes what a previous life of this agent left in the jobs
// folder when it was killed: the processes still working there, then the
// job folders. A new Service runs no job yet, so everything there is left
// over; what cannot be removed is logged, and the agent starts anyway.
func sweepJobsDir(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			log.Warnw("jobs folder not swept", "dir", dir, "err", err)
		}
		return
	}
	if len(entries) == 0 {
		return
	}
	n, err := proc.KillLeftovers(dir)
	if err != nil {
		log.Warnw("leftover processes not ended", "dir", dir, "err", err)
	}
	for _, e := range entries {
		if err := proc.Cleanup(filepath.Join(dir, e.Name())); err != nil {
			log.Warnw("leftover job folder not removed", "err", err)
		}
	}
	log.Infow("removed what an earlier run of the agent left", "folders", len(entries), "processes", n)
}

// prepareJobsDir makes the jobs folder 0711: job users (who own their own
// folders in it) may pass through, nobody may list it.
func prepareJobsDir(dir string) error {
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return fmt.Errorf("worker: jobs folder: %w", err)
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		return fmt.Errorf("worker: jobs folder: %w", err)
	}
	return nil
}

// Close stops taking adverts, kills every running job here and waits.
func (s *Service) Close() error {
	s.cancel()
	s.wg.Wait()
	return nil
}
