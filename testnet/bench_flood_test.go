package testnet

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/flood"
	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/job/submitter"
	"github.com/zorilla-p2p/zorilla/node"
	"github.com/zorilla-p2p/zorilla/overlay"
)

// The flood's figures (BENCHMARKS.md): on a mocknet of sites x hosts agents
// of 4 cores, how many advert messages one job costs per agent, and how
// long from submit to enough offers, with our loop (stop as soon as the
// offers are feasible) against Zorilla's fixed schedule (1 s, 2 s, 4 s...
// waits, enough checked only at the end of each wait).
//
//	go test -run XXX -bench FloodSites -benchtime 1x -timeout 120m -v ./testnet -args -flood.out=/tmp/flood.md
//	(smaller: ... -args -flood.hosts=25 -flood.n=20,50 -flood.reps=1)
//
// A benchmark's log is printed when it ends, and cut to a few lines
// without -v; progress goes to stderr as it happens.
var (
	benchSites = flag.Int("flood.sites", 4, "flood benchmark: sites in a line")
	benchHosts = flag.Int("flood.hosts", 100, "flood benchmark: agents per site")
	benchReps  = flag.Int("flood.reps", 3, "flood benchmark: runs of each case")
	benchSizes = flag.String("flood.n", "50,200,600", "flood benchmark: job sizes in slots")
	benchOut   = flag.String("flood.out", "", "flood benchmark: also write the result table to this file")
)

const benchCores = 4

// The modes compared. "ours" is flood.Advertise with the agent's schedule
// and Extra radii flooded once enough is in; "zorilla" floods radius r,
// waits 2^(r-1) s and only then looks at the offers; "agent" is a real dry
// run through agent 0, timed from its record (reserving to done, which
// adds the 300 ms offer grace and the cancels).
var benchModes = []string{"zorilla", "ours, extra 0", "ours, extra 1", "agent dry run"}

type benchResult struct {
	mode   string
	n      int
	took   time.Duration // submit to enough offers
	radius int           // radius that brought enough
	msgs   uint64        // advert messages sent by every agent and the submitter
	drops  uint64        // adverts dropped or not sent, anywhere
	lost   string        // drops by reason
	nb     int           // the submitter's neighbours when the run began
	offers int
	ok     bool
}

func BenchmarkFloodSites(b *testing.B) {
	for range b.N {
		benchFloodSites(b)
	}
}

func benchFloodSites(b *testing.B) {
	sizes, err := parseSizes(*benchSizes)
	if err != nil {
		b.Fatal(err)
	}
	topo := benchTopology(*benchSites, *benchHosts)
	ov := benchOverlay(topo.Size())
	ctx := context.Background()
	start := time.Now()
	net, err := Mocknet(ctx, topo, Options{Overlay: ov, Seed: 1, Configure: func(_ int, cfg *node.Config) {
		cfg.MaxJobs = 1 // J=1, P=cores: P2P-MPI's usual owner setting
	}})
	if err != nil {
		b.Fatal(err)
	}
	defer net.Close()
	benchLog(b, "%d agents started in %v; %s", topo.Size(), time.Since(start).Round(time.Second), memory())
	awaitSettled(b, net, ov, start)
	p, err := addProbe(ctx, net, 0, ov)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	benchAwait(b, net, "the submitter probe has its neighbours", 5*time.Minute, func() bool {
		return len(p.ov.Neighbours()) >= ov.K+ov.Random
	})
	prog := benchProgram(b, net.Nodes[0])
	benchLog(b, "settled after %v; %s", time.Since(start).Round(time.Second), memory())

	// A first job opens the connections from workers to the submitter
	// and warms the caches; it is not counted.
	w := benchRun(b, net, p, prog, "ours, extra 0", sizes[0])
	benchLog(b, "warm-up: %v, %d offers", w.took.Round(time.Millisecond), w.offers)
	var results []benchResult
	for rep := range *benchReps {
		for _, n := range sizes {
			for _, mode := range benchModes {
				settled(b, net, p, ov)
				r := benchRun(b, net, p, prog, mode, n)
				benchLog(b, "rep %d n=%d %-14s %v radius %d, %.1f msgs/agent, %d offers, %d submitter neighbours, ok=%v, adverts lost %d (%s)",
					rep, n, mode, r.took.Round(time.Millisecond), r.radius, float64(r.msgs)/float64(topo.Size()), r.offers, r.nb, r.ok, r.drops, r.lost)
				results = append(results, r)
			}
		}
	}
	table := benchTable(results, topo.Size())
	b.Logf("\n%s", table)
	if *benchOut != "" {
		if err := os.WriteFile(*benchOut, []byte(table), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// benchTopology is sites in a line, hosts agents of 4 cores each: 1 ms
// inside a site, 10 ms to the next site, 25 ms two sites away, 40 ms for
// three or more.
func benchTopology(sites, hosts int) Topology {
	t := Topology{LocalRTT: time.Millisecond}
	for s := range sites {
		t.Sites = append(t.Sites, Site{Name: string(rune('a' + s)), Hosts: hosts, Cores: benchCores})
	}
	rtt := []time.Duration{0, 10 * time.Millisecond, 25 * time.Millisecond, 40 * time.Millisecond}
	for a := range sites {
		for c := a + 1; c < sites; c++ {
			t.Links = append(t.Links, SiteLink{A: t.Sites[a].Name, B: t.Sites[c].Name, RTT: rtt[min(c-a, 3)]})
		}
	}
	return t
}

// benchOverlay is overlay.FastConfig with every period stretched by n/32,
// so that hundreds of agents do the background work of 32 fast ones and
// the floods are timed on a quiet machine. Timeouts are unchanged.
func benchOverlay(n int) overlay.Config {
	c := overlay.FastConfig()
	f := max(1, float64(n)/32)
	for _, d := range []*time.Duration{&c.Tick, &c.NeighbourRefresh, &c.Refresh, &c.RetryAfter, &c.DeadFor,
		&c.ExchangeInterval, &c.InboundLease, &c.WalkInterval, &c.DHTRefresh} {
		*d = time.Duration(float64(*d) * f)
	}
	return c
}

// settled waits, before a run, until the overlay is as it was when the
// runs began: a loaded machine makes probes time out and neighbours
// change, and the submitter's neighbour set decides how far each radius
// reaches. A run that cannot wait for it is logged.
func settled(b *testing.B, net *Net, p *probe, ov overlay.Config) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	err := net.Await(ctx, "overlay settled before a run", func() bool {
		return len(p.ov.Neighbours()) >= ov.K+ov.Random && fullShare(net, ov) >= 0.99
	})
	if err != nil {
		benchLog(b, "%v: %.1f%% of agents full, the submitter has %d neighbours", err, 100*fullShare(net, ov), len(p.ov.Neighbours()))
	}
}

// fullShare is the fraction of agents with K nearest and Random
// long-range neighbours.
func fullShare(net *Net, ov overlay.Config) float64 {
	full := 0
	for _, nd := range net.Nodes {
		near, far := 0, 0
		for _, p := range nd.Overlay().Peers() {
			if p.Near {
				near++
			}
			if p.LongRange {
				far++
			}
		}
		if near == ov.K && far == ov.Random {
			full++
		}
	}
	return float64(full) / float64(len(net.Nodes))
}

// awaitSettled waits until 99% of the agents have their K nearest and
// Random long-range neighbours and the graph is strongly connected. On a
// loaded machine a few probes always time out, so a few agents are always
// replacing a neighbour.
func awaitSettled(b *testing.B, net *Net, ov overlay.Config, start time.Time) {
	last := time.Now()
	benchAwait(b, net, "99% of agents with full neighbour sets, graph connected", 15*time.Minute, func() bool {
		share := fullShare(net, ov)
		if time.Since(last) > 15*time.Second {
			last = time.Now()
			benchLog(b, "t=%v: %.1f%% of %d agents have full neighbour sets; %s",
				time.Since(start).Round(time.Second), 100*share, len(net.Nodes), memory())
		}
		return share >= 0.99 && net.Graph().StronglyConnected()
	})
}

func benchAwait(b *testing.B, net *Net, what string, within time.Duration, cond func() bool) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if err := net.Await(ctx, what, cond); err != nil {
		b.Fatal(err)
	}
}

// benchProgram uploads a trivial program to nd for its dry runs.
func benchProgram(b *testing.B, nd *node.Node) proto.FileRef {
	path := filepath.Join(b.TempDir(), "job.sh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		b.Fatal(err)
	}
	h, size, err := nd.Blobs().PutFile(path)
	if err != nil {
		b.Fatal(err)
	}
	return proto.FileRef{Name: "job.sh", Hash: h.String(), Size: size}
}

// benchRun floods one job of n slots in the given mode, then cancels every
// lease and waits until the network is quiet and every lease is gone.
func benchRun(b *testing.B, net *Net, p *probe, prog proto.FileRef, mode string, n int) benchResult {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	before, dropped := advertsSent(net, p), advertsLost(net, p)
	r := benchResult{mode: mode, n: n}
	nb := len(p.ov.Neighbours())
	if mode == "agent dry run" {
		r = agentDryRun(b, net.Nodes[0], prog, n)
	} else {
		c := p.begin(n)
		body, err := proto.EncodeNeed(proto.Need{Job: c.id, N: n, R: 1})
		if err != nil {
			b.Fatal(err)
		}
		adv := flood.Advert{Job: string(c.id), Body: body}
		r.ok, r.took, r.radius = floodMode(ctx, b, p, c, adv, mode)
		offers := p.end(c)
		r.offers = len(offers)
		p.cancelAll(ctx, c.id, offers)
	}
	r.mode, r.n, r.nb = mode, n, nb
	r.msgs = awaitQuiet(b, net, p) - before
	r.drops, r.lost = lostSince(dropped, advertsLost(net, p))
	return r
}

// floodMode runs one of the two loops from the probe.
func floodMode(ctx context.Context, b *testing.B, p *probe, c *collect, adv flood.Advert, mode string) (bool, time.Duration, int) {
	sched := submitter.DefaultConfig().Schedule // 1 s, doubling, up to radius 8
	if mode == "zorilla" {
		wait := sched.First
		for r := 1; r <= sched.MaxRadius; r++ {
			if err := p.fl.Flood(ctx, adv, r); err != nil {
				b.Fatal(err)
			}
			<-time.After(wait)
			if p.feasible(c) {
				return true, time.Since(c.start), r
			}
			wait *= 2
		}
		return false, time.Since(c.start), sched.MaxRadius
	}
	sched.Extra = 0
	if mode == "ours, extra 1" {
		sched.Extra = 1
	}
	floods := p.fl.Stats().Originated
	err := p.fl.Advertise(ctx, adv, c.enough, sched)
	radius := int(p.fl.Stats().Originated-floods) - sched.Extra
	if err != nil {
		return false, time.Since(c.start), radius
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return true, c.at, radius
}

// agentDryRun submits a dry run through nd and times it from its record.
func agentDryRun(b *testing.B, nd *node.Node, prog proto.FileRef, n int) benchResult {
	d := job.NewDescription("job.sh", nil, n)
	d.Strategy = job.Concentrate
	floods := nd.Flooder().Stats().Originated
	id, err := nd.Submitter().Submit(submitter.Submission{Desc: d, Program: prog, DryRun: true})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var rec job.Record
	err = nd.Submitter().Watch(ctx, id, 0, func(u job.Update) error {
		if u.Kind == "end" {
			rec = *u.Record
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	var from, to time.Time
	for _, e := range rec.History {
		switch e.State {
		case job.Reserving:
			from = e.At
		case job.Done:
			to = e.At
		}
	}
	extra := nd.Config().Services.Submitter.Schedule.Extra
	return benchResult{ok: rec.State == job.Done, took: to.Sub(from), offers: len(rec.Offers),
		radius: int(nd.Flooder().Stats().Originated-floods) - extra}
}

// advertsSent sums the advert messages every agent and the probe have sent.
func advertsSent(net *Net, p *probe) uint64 {
	total := p.fl.Stats().Sent
	for _, nd := range net.Nodes {
		total += nd.Flooder().Stats().Sent
	}
	return total
}

// awaitQuiet waits until no advert has been sent for two seconds (a
// loaded machine delays forwards by hundreds of milliseconds) and every
// lease is gone, and returns the messages sent so far.
func awaitQuiet(b *testing.B, net *Net, p *probe) uint64 {
	last, still := advertsSent(net, p), 0
	benchAwait(b, net, "no more adverts and no lease left", 2*time.Minute, func() bool {
		now := advertsSent(net, p)
		if now != last {
			last, still = now, 0
			return false
		}
		still++
		return still >= 80 && len(leasesOf(net)) == 0 // Await polls every 25 ms
	})
	return last
}
