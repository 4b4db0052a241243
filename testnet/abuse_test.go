package testnet

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/flood"
	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/node"
)

// The abuse test: a raw libp2p host on loopback floods one
// agent with adverts, then lease requests, then file fetches, each at 100
// times the agent's per-peer limit, for abuseSeconds (3 s; 30 s with
// ZORILLA_ABUSE_SECONDS=30). Each flood is throttled to the limit (what
// the agent serves stays within burst + rate × time), every refusal is
// counted in the agent's stats, the process's memory stays bounded while
// it lasts and comes back after, and a job an allowed peer submits in the
// middle of it runs on every agent, the flooded one included. The table
// logged at the end is the one in BENCHMARKS.md.
func TestAbuseFloods(t *testing.T) {
	dur := abuseSeconds(t)
	const agents, cores, victim, sub = 3, 2, 1, 0
	net := startLoopback(t, agents, func(_ int, cfg *node.Config) {
		e2eConfig(cfg, cores)
		def := flood.DefaultConfig() // the real limit, not the tests' 1000/s
		cfg.Services.Flood.Rate, cfg.Services.Flood.Burst = def.Rate, def.Burst
	})
	connected(t, net, 2)
	allowOnlyAgents(t, net)
	v, s := net.Nodes[victim], net.Nodes[sub]
	raw := rawHost(t, v)
	connectRaw(t, raw, s)
	prog := upload(t, s, "exit 0")

	quiet := runEverywhere(t, net, prog)
	t.Logf("quiet: a job on every agent scheduled in %v", quiet.Round(time.Millisecond))
	before := memNow(true)
	var rows []abuseRow
	for _, k := range abuseKinds(t, net, raw, victim, sub) {
		rows = append(rows, floodOnce(t, net, k, dur, prog))
	}
	after := memAfter(before)
	var table strings.Builder
	writeAbuseTable(&table, rows, quiet, before, after)
	t.Logf("abuse test, %v per flood:\n%s", dur, table.String())
	if after.heap > before.heap+32<<20 {
		t.Errorf("heap after the floods %s, before %s: more than 32 MiB kept", after, before)
	}
}

// abuseKind is one kind of flood: which agent, which protocol, the
// agent's per-peer limit, and how to read what it served and refused.
type abuseKind struct {
	name      string
	target    int
	f         flooder
	rate      float64 // the agent's limit, per second
	burst     int
	refusedAs string                  // the key of node.StatsInfo.Refused
	servedBy  func(*node.Node) uint64 // what the agent served, when it counts it
}

func abuseKinds(t *testing.T, net *Net, raw *attackerHost, victim, sub int) []abuseKind {
	v, s := net.Nodes[victim], net.Nodes[sub]
	fcfg := v.Config().Services.Flood
	rpc := node.DefaultRPCLimits()
	adverts := make([][]byte, 512)
	for i := range adverts {
		adverts[i] = raw.message(t, 2, raw.envelope(t, proto.NewJobID(), raw.h.ID()))
	}
	lease := mustJSON(t, proto.LeaseRequest{Op: proto.OpCommit, Job: proto.NewJobID(), Lease: "not-a-lease",
		Commit: &proto.Commit{Key: "k", N: 1, R: 1, Program: proto.FileRef{Name: "p", Hash: strings.Repeat("0", 64), Size: 1},
			Procs: []proto.Proc{{}}, RankTable: proto.RankTable{Hosts: []proto.HostRef{{Peer: raw.h.ID()}}, Ranks: [][]int{{0}}}}})
	fetch := mustJSON(t, proto.FetchRequest{Job: proto.NewJobID(), Key: "not-the-key", Hash: strings.Repeat("0", 64)})
	const senders, times = 48, 100
	return []abuseKind{
		{name: "adverts", target: victim, rate: fcfg.Rate, burst: fcfg.Burst, refusedAs: "advert-" + string(flood.DropRateLimited),
			f: flooder{raw: raw, to: v.ID(), proto: flood.Protocol(v.Config().Network), rate: times * fcfg.Rate, senders: senders,
				payload: func(i uint64) []byte { return adverts[i%uint64(len(adverts))] }},
			servedBy: func(n *node.Node) uint64 { return n.Flooder().Stats().Received }},
		{name: "lease requests", target: victim, rate: rpc.Lease.Rate, burst: rpc.Lease.Burst, refusedAs: node.RefusedLeaseRate,
			f: flooder{raw: raw, to: v.ID(), proto: proto.LeaseProtocol, rate: times * rpc.Lease.Rate, senders: senders,
				payload: func(uint64) []byte { return lease }, reply: true}},
		{name: "fetches", target: sub, rate: rpc.Fetch.Rate, burst: rpc.Fetch.Burst, refusedAs: node.RefusedFetchRate,
			f: flooder{raw: raw, to: s.ID(), proto: proto.FetchProtocol, rate: times * rpc.Fetch.Rate, senders: senders,
				payload: func(uint64) []byte { return fetch }, reply: true}},
	}
}

// abuseRow is one flood's figures.
type abuseRow struct {
	kind              string
	limit             float64
	sent, served      float64 // per second
	refused           uint64  // counted by the agent under the limit's reason
	peak              memSample
	scheduled         time.Duration // the allowed peer's job, submitted during the flood
	attempts, missing uint64
}

// floodOnce runs one flood for dur, submits a job on every agent a third
// of the way in, keeps flooding until the job runs, and checks the
// throttling.
func floodOnce(t *testing.T, net *Net, k abuseKind, dur time.Duration, prog proto.FileRef) abuseRow {
	t.Helper()
	target := net.Nodes[k.target]
	served0, refused0 := uint64(0), target.Stats().Refused[k.refusedAs]
	if k.servedBy != nil {
		served0 = k.servedBy(target)
	}
	peakBase := memNow(true)
	stop, stopMem := make(chan struct{}), make(chan struct{})
	peak := sampleMem(stopMem)
	loadc := make(chan *floodLoad, 1)
	go func() { loadc <- k.f.run(stop) }()
	t0 := time.Now()
	<-time.After(dur / 3) // the job comes in the middle of the flood
	scheduled := runEverywhere(t, net, prog)
	<-time.After(time.Until(t0.Add(dur)))
	close(stop)
	load := <-loadc
	close(stopMem)
	row := abuseRow{kind: k.name, limit: k.rate, sent: load.rate(), peak: <-peak, scheduled: scheduled,
		refused: target.Stats().Refused[k.refusedAs] - refused0, attempts: load.attempts.Load(), missing: load.missed.Load()}
	served := load.served.Load()
	if k.servedBy != nil {
		served = k.servedBy(target) - served0
	}
	elapsed := load.end.Sub(load.start).Seconds()
	row.served = float64(served) / elapsed
	// What the agent may serve: the burst, the rate over the flood, and
	// the allowed job's own requests (a few per flood radius).
	allowed := float64(k.burst) + k.rate*elapsed*1.05 + 20
	switch {
	case float64(served) > allowed:
		t.Errorf("%s: the agent served %d in %.1f s, its limit allows %.0f", k.name, served, elapsed, allowed)
	case row.sent < 10*k.rate:
		t.Errorf("%s: only %.0f/s sent, not a flood of a %v/s limit (loaded machine?)", k.name, row.sent, k.rate)
	case row.refused == 0:
		t.Errorf("%s: no refusal counted under %q: %v", k.name, k.refusedAs, target.Stats().Refused)
	case row.peak.heap > peakBase.heap+64<<20:
		t.Errorf("%s: heap peaked at %s during the flood, %s before it: more than 64 MiB", k.name, row.peak, peakBase)
	}
	t.Logf("%s: %d sent (%.0f/s, %d ticks missed), %d served, %d refused by the limit, peak %s, job scheduled in %v",
		k.name, row.attempts, row.sent, row.missing, served, row.refused, row.peak, scheduled.Round(time.Millisecond))
	return row
}

// runEverywhere submits, from agent 0, a job on every slot of the net
// (concentrate, so every agent must take part), waits for it to end done,
// and returns how long it took to reach running.
func runEverywhere(t *testing.T, net *Net, prog proto.FileRef) time.Duration {
	t.Helper()
	s := net.Nodes[0]
	d := job.NewDescription("job.sh", nil, len(net.Nodes)*s.Config().Cores)
	d.Strategy = job.Concentrate
	rec := awaitEnd(t, s, submit(t, s, d, prog, false))
	if rec.State != job.Done {
		t.Fatalf("job ended %s: %s", rec.State, rec.Reason)
	}
	if hosts := planHosts(t, net, rec.Plan); len(hosts) != len(net.Nodes) {
		t.Fatalf("plan %v: want every agent", hosts)
	}
	for _, e := range rec.History {
		if e.State == job.Running {
			return e.At.Sub(rec.Created)
		}
	}
	t.Fatal(errNotScheduled)
	return 0
}

// allowOnlyAgents gives every agent an allow list of the net's agents, as
// an owner would: the raw host is not allowed anywhere.
func allowOnlyAgents(t *testing.T, net *Net) {
	t.Helper()
	allow := map[peer.ID]bool{}
	for _, nd := range net.Nodes {
		allow[nd.ID()] = true
	}
	for _, nd := range net.Nodes {
		p := nd.Leases().Policy()
		p.Allow = allow
		if err := nd.Leases().SetPolicy(p); err != nil {
			t.Fatal(err)
		}
	}
}

func connectRaw(t *testing.T, raw *attackerHost, to *node.Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := raw.h.Connect(ctx, to.AddrInfo()); err != nil {
		t.Fatal(err)
	}
}

// mustJSON frames v as the job protocols send it.
func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return frame(t, b)
}

// memAfter waits, up to 10 s, for the heap to come back within 8 MiB of
// before (stream handlers ending, buffers freed), and returns it.
func memAfter(before memSample) memSample {
	deadline := time.Now().Add(10 * time.Second)
	for {
		m := memNow(true)
		if m.heap <= before.heap+8<<20 || time.Now().After(deadline) {
			return m
		}
		<-time.After(200 * time.Millisecond) // polling interval
	}
}

func writeAbuseTable(w *strings.Builder, rows []abuseRow, quiet time.Duration, before, after memSample) {
	fmt.Fprintf(w, "| flood | limit /s | sent /s | served /s (burst included) | refused (counted) | peak memory | job scheduled in |\n")
	fmt.Fprintf(w, "| --- | --- | --- | --- | --- | --- | --- |\n")
	fmt.Fprintf(w, "| none (quiet) | | | | | %s | %v |\n", before, quiet.Round(time.Millisecond))
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %.0f | %.0f | %.1f | %d | %s | %v |\n", r.kind, r.limit, r.sent, r.served, r.refused, r.peak, r.scheduled.Round(time.Millisecond))
	}
	fmt.Fprintf(w, "| after | | | | | %s | |\n", after)
}
