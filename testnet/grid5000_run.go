package testnet

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/job/submitter"
	"github.com/zorilla-p2p/zorilla/node"
	"github.com/zorilla-p2p/zorilla/overlay"
)

// Grid5000Config configures the simulated Grid'5000 co-allocation
// experiment: every host of Table 1 is a full agent on mocknet, and dry-run
// jobs are submitted from one nancy host.
type Grid5000Config struct {
	// Scale divides every cluster's hosts, rounded up: 1 is the paper's 350
	// hosts, 10 a 37-host miniature for unit tests.
	Scale int
	// Ns are the process counts requested, in order (the paper: 100 to 600
	// by 50).
	Ns []int
	// Strategies are run for every n, in order.
	Strategies []job.Strategy
	// Seed chooses who bootstraps from whom and which nancy host submits.
	Seed uint64
	// Submitter is every agent's submitter config: the flood schedule,
	// grace and deadline of the simulation.
	Submitter submitter.Config
	// Converge bounds the wait for the overlay to settle before the first
	// job, and Quiet is how long every agent's advert counter must stay
	// unchanged after a job before its messages are counted.
	Converge, Quiet time.Duration
	// Overlay is every agent's overlay config; the zero value means
	// SimOverlay(hosts).
	Overlay overlay.Config
	// Progress, if set, is told how the start-up goes (a few lines a
	// minute), for a command to show.
	Progress func(msg string)
	// NoCollect leaves out the garbage collection before each job
	// (Allocate), to see what a collection within a job costs it.
	NoCollect bool
}

// DefaultGrid5000Config is the paper's experiment at 1/scale of its size:
// n from 100/scale to 600/scale by 50/scale, concentrate then spread.
func DefaultGrid5000Config(scale int) Grid5000Config {
	scale = max(1, scale)
	var ns []int
	for n := 100; n <= 600; n += 50 {
		ns = append(ns, max(1, n/scale))
	}
	sub := submitter.DefaultConfig()
	// A fast flood: 200 ms before radius 2, doubling; radius 6 is the
	// overlay's diameter at 350 agents with room to spare, so a job
	// asking for more than the net holds is placed after 12.6 s.
	sub.Schedule.First = 200 * time.Millisecond
	sub.Schedule.MaxRadius = 6
	sub.Schedule.Extra = 1
	// The grace bounds the wait for the offers of the extra radius and
	// for a closer host that has not answered yet; a job is placed as
	// soon as its last radius is answered, and the grace only matters
	// when an answer is late. On real machines the farthest site answers
	// an advert in ~40 ms; here every agent shares two cores, and a radius
	// that reaches the whole net is some 8,000 advert copies to handle
	// before the last offers leave: the full-size net needs a second
	// (300 ms left a nancy host's offer out of every concentrate n=450
	// plan in a full-size test run), the miniature 300 ms.
	sub.OfferGrace = 300 * time.Millisecond
	if scale < 4 {
		sub.OfferGrace = time.Second
	}
	// 30 s: more than the whole schedule; a job that is not placed by then
	// is a bug of the simulation, not a slow network.
	sub.Deadline = 30 * time.Second
	return Grid5000Config{
		Scale: scale, Ns: ns, Strategies: []job.Strategy{job.Concentrate, job.Spread},
		Seed: 1, Submitter: sub,
		// 10 min: 350 agents on 2 cores converge in a few minutes.
		Converge: 10 * time.Minute,
		// 1 s: an advert crosses the net (radius 6, <= 9 ms a hop) in
		// well under 100 ms; anything still moving after a quiet second
		// would be a storm, and is counted in the next job.
		Quiet: time.Second,
	}
}

// SimOverlay is the overlay config of the simulation: overlay.ScaledConfig
// to converge, with three changes so that a converged net falls quiet.
// Nothing moves in a simulated grid, and every probe an idle agent sends
// competes for the same two cores as the pings a submitter times when
// offers come in: a quiet overlay keeps those RTTs honest.
//
//   - MaxKnown holds every agent (n-1): a full table forgets its farthest
//     peer for every new one the DHT lists, and measures the newcomer, so
//     a table smaller than the net probes at full rate for ever;
//   - two probes per tick (FastConfig's, said again here): 350 agents
//     measure all their peers in about three minutes and leave the
//     machine some CPU (with three, RTTs measured on a starved machine,
//     kept for half an hour, put nancy hosts behind lyon's; with one the
//     start took six minutes);
//   - neighbours are measured again every minute, other peers every half
//     hour.
func SimOverlay(n int) overlay.Config {
	c := overlay.ScaledConfig(n)
	c.MaxKnown = max(c.MaxKnown, n)
	c.ProbesPerTick = 2
	c.NeighbourRefresh = max(c.NeighbourRefresh, time.Minute)
	c.Refresh = max(c.Refresh, 30*time.Minute)
	return c
}

func (c Grid5000Config) validate() error {
	var errs []error
	if c.Scale < 1 || len(c.Ns) == 0 || len(c.Strategies) == 0 || c.Converge <= 0 || c.Quiet <= 0 {
		errs = append(errs, fmt.Errorf("scale %d, %d n values, %d strategies, converge %v, quiet %v: want all positive",
			c.Scale, len(c.Ns), len(c.Strategies), c.Converge, c.Quiet))
	}
	for _, n := range c.Ns {
		if n < 1 || n > proto.MaxProcs {
			errs = append(errs, fmt.Errorf("n=%d out of 1..%d", n, proto.MaxProcs))
		}
	}
	for _, s := range c.Strategies {
		if _, err := job.ParseStrategy(string(s)); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("testnet: grid5000 config: %w", errors.Join(errs...))
	}
	return nil
}

// Grid5000 is the running simulation: the agents of Table 1 on mocknet and
// the nancy host that submits.
type Grid5000 struct {
	Net       *Net
	Clusters  []Cluster // as scaled
	Submitter int       // index of the submitting agent, a nancy host
	Diameter  int       // the submitter's eccentricity in the neighbour graph when it converged

	cfg   Grid5000Config
	prog  proto.FileRef
	index map[peer.ID]int
}

// StartGrid5000 starts the agents of the scaled Table 1 and waits until
// every agent has its full set of neighbours and the neighbour graph is
// strongly connected, so that a flood from nancy can reach every host.
func StartGrid5000(ctx context.Context, cfg Grid5000Config) (*Grid5000, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	g := &Grid5000{Clusters: ScaleClusters(Grid5000Clusters(), cfg.Scale), cfg: cfg}
	topo, err := ClustersTopology(g.Clusters)
	if err != nil {
		return nil, err
	}
	ov := cfg.Overlay
	if ov == (overlay.Config{}) {
		ov = SimOverlay(topo.Size())
	}
	g.Net, err = Mocknet(ctx, topo, Options{Seed: cfg.Seed, Overlay: ov, Configure: func(_ int, c *node.Config) {
		c.MaxJobs = 1 // P2P-MPI's J = 1; MaxProcs = cores comes from the site
		c.Services.Submitter = cfg.Submitter
	}})
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6772696435303030))
	g.Submitter = rng.IntN(g.Clusters[0].Hosts)
	g.index = make(map[peer.ID]int, len(g.Net.Nodes))
	for i, nd := range g.Net.Nodes {
		g.index[nd.ID()] = i
	}
	if err := g.converge(ctx); err != nil {
		return nil, errors.Join(err, g.Net.Close())
	}
	if g.prog, err = uploadHostname(g.Net.Nodes[g.Submitter]); err != nil {
		return nil, errors.Join(err, g.Net.Close())
	}
	return g, nil
}

// converge waits for every agent to hold K+Random neighbours (or all the
// others, in a tiny net), for the neighbour graph to be strongly
// connected, and for the agents to have measured all but 1% of the peers
// they know: until then their probes keep both cores busy, and a
// submitter's pings would time the load, not the links.
func (g *Grid5000) converge(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, g.cfg.Converge)
	defer cancel()
	ov := g.Net.opts.Overlay
	want := min(ov.K+ov.Random, len(g.Net.Nodes)-1)
	last := time.Now()
	err := g.Net.Await(ctx, "grid5000 overlay converged", func() bool {
		short, known, unmeasured := 0, 0, 0
		for _, nd := range g.Net.Nodes {
			if len(nd.Overlay().Neighbours()) < want {
				short++
			}
			for _, p := range nd.Overlay().Peers() {
				known++
				if !p.Measured && !p.Dead {
					unmeasured++
				}
			}
		}
		if g.cfg.Progress != nil && time.Since(last) > 10*time.Second {
			last = time.Now()
			g.cfg.Progress(fmt.Sprintf("%d of %d agents have fewer than %d neighbours; %d of %d known peers not measured yet",
				short, len(g.Net.Nodes), want, unmeasured, known))
		}
		return short == 0 && unmeasured*100 <= known && g.Net.Graph().StronglyConnected()
	})
	if err != nil {
		return err
	}
	g.Diameter = g.Net.Graph().eccentricity(g.Net.Nodes[g.Submitter].ID())
	return nil
}

// uploadHostname puts the experiment's program, a script echoing the name
// of its host, in the submitter's blob store. Dry runs never start it, but
// a submission must name an uploaded program.
func uploadHostname(nd *node.Node) (proto.FileRef, error) {
	dir, err := os.MkdirTemp("", "grid5000-")
	if err != nil {
		return proto.FileRef{}, fmt.Errorf("testnet: hostname program: %w", err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "hostname.sh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\nhostname\n"), 0o755); err != nil {
		return proto.FileRef{}, fmt.Errorf("testnet: hostname program: %w", err)
	}
	h, size, err := nd.Blobs().PutFile(path)
	if err != nil {
		return proto.FileRef{}, fmt.Errorf("testnet: hostname program: %w", err)
	}
	return proto.FileRef{Name: "hostname.sh", Hash: h.String(), Size: size}, nil
}

// Close stops every agent.
func (g *Grid5000) Close() error { return g.Net.Close() }

// Run allocates every n with every strategy, one dry-run job at a time,
// and hands each result to each (which may be nil) as it comes.
func (g *Grid5000) Run(ctx context.Context, each func(Allocation)) ([]Allocation, error) {
	var out []Allocation
	for _, n := range g.cfg.Ns {
		for _, s := range g.cfg.Strategies {
			a, err := g.Allocate(ctx, s, n)
			if err != nil {
				return out, err
			}
			out = append(out, a)
			if each != nil {
				each(a)
			}
		}
	}
	return out, nil
}

// Allocate submits one dry-run job of n processes with strategy s from the
// nancy host, waits for its end and for the network to fall quiet, and
// tallies where the plan put the processes and what it cost.
func (g *Grid5000) Allocate(ctx context.Context, s job.Strategy, n int) (Allocation, error) {
	if !g.cfg.NoCollect {
		// One process holds every agent's heap (1.3-1.5 GB live at full
		// size), and a collection cycle over it marks for 3.5-8 s with
		// both cores: a job it overlaps took 2-3.5 s instead of 1. A real
		// agent's heap is a 350th of that. So the garbage is collected
		// between jobs, as testing.B does before each benchmark, and a
		// cycle does not start within the next job's few seconds.
		runtime.GC()
	}
	before, cpu := g.counters(), processCPU()
	d := job.NewDescription(g.prog.Name, nil, n)
	d.Strategy = s
	sub := g.Net.Nodes[g.Submitter].Submitter()
	id, err := sub.Submit(submitter.Submission{Desc: d, Program: g.prog, DryRun: true})
	if err != nil {
		return Allocation{}, fmt.Errorf("grid5000 %s n=%d: submit: %w", s, n, err)
	}
	rec, err := g.await(ctx, sub, id)
	if err != nil {
		return Allocation{}, fmt.Errorf("grid5000 %s n=%d: %w", s, n, err)
	}
	cpu = processCPU() - cpu
	if err := g.quiesce(ctx, id); err != nil {
		return Allocation{}, fmt.Errorf("grid5000 %s n=%d: %w", s, n, err)
	}
	a, err := Tally(rec, g.where)
	if err != nil {
		return Allocation{}, fmt.Errorf("grid5000 %s n=%d: %w", s, n, err)
	}
	after := g.counters()
	a.Adverts, a.Reached = after.sent-before.sent, after.reached(before)
	a.Dropped = after.dropped - before.dropped
	a.CPU = cpu
	return a, nil
}

// await follows job id until it ends and returns its final record, which
// must be a successful list-match.
func (g *Grid5000) await(ctx context.Context, sub *submitter.Submitter, id job.ID) (job.Record, error) {
	ctx, cancel := context.WithTimeout(ctx, g.cfg.Submitter.Deadline+time.Minute)
	defer cancel()
	var end *job.Record
	err := sub.Watch(ctx, id, 0, func(u job.Update) error {
		if u.Kind == "end" {
			end = u.Record
		}
		return nil
	})
	switch {
	case err != nil:
		return job.Record{}, fmt.Errorf("watch %s: %w", id, err)
	case end == nil:
		return job.Record{}, fmt.Errorf("watch %s: no end", id)
	case end.State != job.Done || end.Plan == nil:
		return job.Record{}, fmt.Errorf("job %s ended %s without a plan: %s", id, end.State, end.Reason)
	}
	return *end, nil
}

// quiesce waits until no agent holds a lease of job id any more (every
// cancel applied, every late offer refused and released) and the advert
// counters of all agents have not moved for Quiet, so the next job starts
// on an idle net and this job's messages are all counted.
func (g *Grid5000) quiesce(ctx context.Context, id job.ID) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	holders := func() []int {
		var out []int
		for i, nd := range g.Net.Nodes {
			if _, held := nd.Leases().ByJob(id); held {
				out = append(out, i)
			}
		}
		return out
	}
	err := g.Net.Await(ctx, "every lease of "+string(id)+" released", func() bool { return len(holders()) == 0 })
	if err != nil {
		return fmt.Errorf("%w: still held by agents %v", err, holders())
	}
	last, since := g.counters().sent, time.Now()
	return g.Net.Await(ctx, "advert counters quiet", func() bool {
		if now := g.counters().sent; now != last {
			last, since = now, time.Now()
		}
		return time.Since(since) >= g.cfg.Quiet
	})
}

// where places an agent: its index and cluster, by peer ID.
func (g *Grid5000) where(p peer.ID) (Placed, bool) {
	i, ok := g.index[p]
	if !ok {
		return Placed{}, false
	}
	c := g.Clusters[g.Net.SiteOf(i)]
	rtt := time.Duration(0)
	if i != g.Submitter {
		rtt = ClusterRTT(g.Clusters[g.Net.SiteOf(g.Submitter)], c)
	}
	return Placed{Agent: i, Site: c.Site, P: c.Cores, RTT: rtt}, true
}

// counters is a snapshot of every agent's flood counters.
type counters struct {
	sent, dropped uint64
	delivered     []uint64 // per agent
}

func (g *Grid5000) counters() counters {
	c := counters{delivered: make([]uint64, len(g.Net.Nodes))}
	for i, nd := range g.Net.Nodes {
		st := nd.Flooder().Stats()
		c.sent += st.Sent
		c.dropped += st.TotalDropped()
		c.delivered[i] = st.Delivered
	}
	return c
}

// reached counts the agents whose worker was handed an advert since
// before: each of them, idle and open, answered with one offer.
func (c counters) reached(before counters) int {
	n := 0
	for i := range c.delivered {
		if c.delivered[i] > before.delivered[i] {
			n++
		}
	}
	return n
}
