package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/flood"
	"github.com/zorilla-p2p/zorilla/internal/blob"
	"github.com/zorilla-p2p/zorilla/internal/chunk"
	"github.com/zorilla-p2p/zorilla/internal/rpc"
	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/submitter"
	"github.com/zorilla-p2p/zorilla/mpi/router"
	"github.com/zorilla-p2p/zorilla/worker"
	"github.com/zorilla-p2p/zorilla/worker/proc"
)

// Services tunes the services the agent runs on top of its overlay. The
// zero value of each field takes that package's default.
type Services struct {
	Flood     flood.Config
	Worker    worker.ServiceConfig
	Leases    worker.LeaseConfig
	Submitter submitter.Config
	Proc      proc.Config
	Router    router.Config
	RPC       RPCLimits // per-peer rate limits on lease requests, offers and fetches
	Chunks    chunk.Config
}

// DefaultServices returns each service's default configuration.
func DefaultServices() Services {
	return Services{
		Flood:     flood.DefaultConfig(),
		Worker:    worker.DefaultServiceConfig(),
		Leases:    worker.DefaultLeaseConfig(),
		Submitter: submitter.DefaultConfig(),
		Proc:      proc.DefaultConfig(),
		Router:    router.DefaultConfig(),
		RPC:       DefaultRPCLimits(),
		Chunks:    chunk.DefaultConfig(),
	}
}

// startServices wires the job services onto the host and overlay: the
// request/response endpoint, the blob store, the worker (policy, leases,
// processes), the flood, and the submitter with its control API routes.
// Each registers its teardown, so Close stops them in reverse order: the
// submitter first, the endpoint last.
func (n *Node) startServices() error {
	work, err := n.workDir()
	if err != nil {
		return err
	}
	ep := rpc.New(n.h)
	n.OnClose(ep.Close)
	if err := n.cfg.Services.RPC.apply(ep); err != nil {
		return err
	}
	n.ep = ep
	blobs, err := blob.New(blob.DefaultConfig(filepath.Join(work, "blobs")))
	if err != nil {
		return fmt.Errorf("node: blob store: %w", err)
	}
	n.blobs = blobs
	root, runner, err := n.startSandbox(work)
	if err != nil {
		return err
	}
	policy, err := n.policy()
	if err != nil {
		return err
	}
	policy.IsolatesNetwork = runner.Isolation().OwnNetwork
	leases, err := worker.NewLeases(policy, n.cfg.Services.Leases)
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	n.lease = leases
	wcfg := n.cfg.Services.Worker
	wcfg.JobsDir = filepath.Join(root, "work")
	n.jobsDir = wcfg.JobsDir
	mpi, err := n.startRouter(root)
	if err != nil {
		return err
	}
	n.mpi = mpi
	w, err := worker.NewService(n.h, ep, wcfg, leases, runner, blobs, worker.RouterMPI(mpi))
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	n.OnClose(w.Close)
	n.work = w
	fl, err := flood.New(n.h, n.ov, w.OnAdvert, n.cfg.Services.Flood)
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	n.OnClose(fl.Close)
	n.flood = fl
	store, err := job.OpenStore(work)
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	sub, err := submitter.New(n.h, ep, n.cfg.Services.Submitter, fl, pinger{n}, blobs, store)
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	n.OnClose(sub.Close)
	n.sub = sub
	if err := n.startChunks(ep, blobs); err != nil {
		return err
	}
	api := jobsAPI{sub: sub, blobs: blobs, maxBlob: wcfg.MaxStage}
	api.register(n.Handle)
	n.statsRoute()
	return nil
}

// startRouter starts the MPI router on the agent's rank socket. A unix
// socket path is limited to 108 bytes; a data dir too deep for it gets its
// socket in a short temporary folder instead.
func (n *Node) startRouter(work string) (*router.Router, error) {
	sock := filepath.Join(work, "mpi.sock")
	if len(sock) > 100 {
		dir, err := os.MkdirTemp("", "zmpi-")
		if err != nil {
			return nil, fmt.Errorf("node: mpi socket dir: %w", err)
		}
		n.OnClose(func() error { return os.RemoveAll(dir) })
		sock = filepath.Join(dir, "mpi.sock")
	}
	rcfg := n.cfg.Services.Router
	if n.cfg.sandboxUsers() {
		rcfg.SocketMode = 0o666 // jobs of other users connect; the router asks for the job's key
	}
	r, err := router.New(n.h, sock, rcfg)
	if err != nil {
		return nil, fmt.Errorf("node: mpi router: %w", err)
	}
	n.OnClose(r.Close)
	return r, nil
}

// startSandbox finds where job folders go and makes the process runner
// with the sandbox settings. Its cleanup runs after the worker's, which
// closes the jobs' sandboxes.
func (n *Node) startSandbox(work string) (string, proc.Runner, error) {
	root, err := jobsRoot(work, n.cfg.sandboxUsers())
	if err != nil {
		return "", nil, err
	}
	if root != work {
		// Runs last: an in-memory agent's folder goes; an agent with a data
		// dir leaves nothing behind but what is still in use (the next
		// start sweeps it when the agent was killed).
		if n.cfg.DataDir == "" {
			n.OnClose(func() error { return os.RemoveAll(root) })
		} else {
			n.OnClose(func() error { _ = os.Remove(filepath.Join(root, "work")); _ = os.Remove(root); return nil })
		}
	}
	pc, err := n.cfg.procConfig(root)
	if err != nil {
		return "", nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	runner := proc.NewRunner(pc)
	n.OnClose(runner.Close)
	iso := runner.Isolation()
	if iso.Err != nil {
		return "", nil, fmt.Errorf("node: job sandbox: %w (--run-as none runs jobs without a user of their own)", iso.Err)
	}
	n.sandbox = SandboxInfo{Users: iso.Users, Cgroups: iso.Cgroups, Freezer: iso.Freezer, Network: iso.Network}
	if strings.HasPrefix(iso.Cgroups, "none") || strings.HasPrefix(iso.Network, "host:") {
		log.Warnw("job sandbox incomplete", "sandbox", n.sandbox.String())
	}
	return root, runner, nil
}

// Sandbox says what the sandbox of jobs enforces on this agent.
func (n *Node) Sandbox() SandboxInfo { return n.sandbox }

// JobsDir is the folder that holds one folder per job running here.
func (n *Node) JobsDir() string { return n.jobsDir }

// workDir is where the agent keeps blobs, job records and job folders: the
// data dir, or for an in-memory agent a temporary folder removed on Close.
func (n *Node) workDir() (string, error) {
	if n.cfg.DataDir != "" {
		return n.cfg.DataDir, nil
	}
	dir, err := os.MkdirTemp("", "zorilla-agent-")
	if err != nil {
		return "", fmt.Errorf("node: work dir: %w", err)
	}
	n.OnClose(func() error { return os.RemoveAll(dir) })
	return dir, nil
}

// policy is the owner policy from the agent's settings, with the allow
// and deny lists (trust by default: only the agent itself and the allowed
// submitters, unless Open).
func (n *Node) policy() (worker.Policy, error) {
	p := worker.Policy{
		MaxJobs: n.cfg.MaxJobs, MaxProcs: n.cfg.MaxProcs, Cores: n.cfg.Cores, Memory: n.cfg.Memory,
		OS: runtime.GOOS, Arch: runtime.GOARCH, Labels: n.cfg.Labels,
		MaxPriority: n.cfg.MaxPriority, PriorityCaps: n.cfg.PriorityCaps, MaxSwapSlice: n.cfg.MaxSwapSlice,
		SwapPolicy: n.cfg.SwapPolicy,
	}
	n.trust = newTrust(n.cfg, n.h.ID())
	if err := n.trust.load(); err != nil {
		return p, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	p = n.trust.apply(p)
	return p, p.Validate()
}

// pinger measures a peer's RTT with libp2p's ping protocol, an
// application-level round trip as P2P-MPI measures it (not ICMP), through
// the overlay: the smallest of a few pings on one stream, so that one
// scheduling hiccup on a loaded host does not rank a near offerer behind
// a far one. The sample also feeds the overlay's table.
//
// When the overlay already tracks the peer, the smaller of its smoothed
// RTT and the new sample counts, and a ping that fails does not lose what
// the overlay knows: a load spike only ever adds to a round trip, and
// offers come in bursts (every agent that heard an advert answers at
// once), so the samples taken during a burst are the ones most inflated,
// and some time out.
type pinger struct{ n *Node }

func (p pinger) Ping(ctx context.Context, to peer.ID) (time.Duration, error) {
	known, tracked := p.n.ov.RTT(to)
	if w := pingWait(known, tracked); w > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, w)
		defer cancel()
	}
	d, err := p.n.ov.Measure(ctx, to)
	return offerRTT(d, err, known, tracked)
}

// trackedPingWait bounds the fresh sample of a peer the overlay has
// measured already: its smoothed RTT counts if the sample is late, so a
// longer wait only keeps the offer out of the job (traced on the loaded
// Grid'5000 simulation: one offer pinged for 2.5 s held the placement of
// a 175-host spread job that long). A round trip over 500 ms is the load
// of the machine, not the link.
const trackedPingWait = 500 * time.Millisecond

// pingWait is how long a fresh sample may take: trackedPingWait for a peer
// whose RTT the overlay knows, the caller's bound (0) otherwise.
func pingWait(known time.Duration, tracked bool) time.Duration {
	if tracked && known > 0 {
		return trackedPingWait
	}
	return 0
}

// offerRTT is the RTT an offerer is ranked by: the sample just taken, or
// the overlay's smoothed RTT when it tracks the peer and the sample is
// larger or failed.
func offerRTT(sample time.Duration, err error, known time.Duration, tracked bool) (time.Duration, error) {
	if tracked && known > 0 && (err != nil || known < sample) {
		return known, nil
	}
	return sample, err
}

// Submitter is the agent's submitter side (nil before start).
func (n *Node) Submitter() *submitter.Submitter { return n.sub }

// Flooder is the agent's advert flood.
func (n *Node) Flooder() *flood.Flooder { return n.flood }

// Leases is the agent's lease table: the slots its worker has promised to
// jobs (offers not yet committed, and jobs running here). Tests and the
// control API read it; changing it behind the worker's back is not supported.
func (n *Node) Leases() *worker.Leases { return n.lease }

// Blobs is the agent's content-addressed store of programs and files.
func (n *Node) Blobs() *blob.Store { return n.blobs }
