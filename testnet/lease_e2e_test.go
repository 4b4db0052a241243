package testnet

import (
	"bufio"
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/zorilla-p2p/zorilla/internal/wire"
	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/node"
)

// Leases end to end: a worker's offer holds its slots under a
// lease, so two jobs never get the same slots; leases end by cancel,
// commit, kill or expiry, and nothing is left behind.

// On six agents lending 3 cores each to at most J=2 jobs: two jobs flooded
// at once never get the same slots; and after a cancelled dry run, a job
// cancelled while starting and a finished dry run, no lease is left
// anywhere.
func TestLeasesNeverSharedNorLeftBehind(t *testing.T) {
	const agents, cores = 6, 3
	net := startLoopback(t, agents, func(_ int, cfg *node.Config) {
		e2eConfig(cfg, cores)
		cfg.MaxJobs = 2
	})
	connected(t, net, 2)
	t.Run("concurrent jobs", func(t *testing.T) { concurrentJobs(t, net, cores) })
	t.Run("cancelled dry run", func(t *testing.T) { cancelledDryRun(t, net, agents*cores+1) })
	t.Run("job cancelled while starting", func(t *testing.T) { cancelledWhileStarting(t, net) })
	t.Run("finished dry run", func(t *testing.T) {
		d := job.NewDescription("job.sh", nil, agents*cores)
		d.Strategy = job.Concentrate
		rec := awaitEnd(t, net.Nodes[2], submit(t, net.Nodes[2], d, upload(t, net.Nodes[2], "exit 0"), true))
		if rec.State != job.Done || len(rec.Offers) != agents {
			t.Fatalf("dry run ended %s with %d offers (%s), want done with %d", rec.State, len(rec.Offers), rec.Reason, agents)
		}
		awaitNoLeases(t, net, 5*time.Second, "after a finished dry run")
	})
}

// concurrentJobs floods two jobs at once over the same agents: without
// leases both could be promised all 3 cores of a host. Both run, no host
// runs more processes than it has cores, and every lease ends with them.
func concurrentJobs(t *testing.T, net *Net, cores int) {
	const n = 7 // two jobs of 7 on 18 slots: they must share hosts or wait for each other's spares
	d := job.NewDescription("job.sh", nil, n)
	d.Strategy = job.Concentrate
	subs := []*node.Node{net.Nodes[0], net.Nodes[1]}
	var jobs []job.ID
	for _, nd := range subs {
		jobs = append(jobs, submit(t, nd, d, upload(t, nd, "sleep 30"), false))
	}
	for k, nd := range subs {
		awaitState(t, net, nd, jobs[k], job.Running)
	}
	// Both run: count each host's processes over both plans, and check
	// every lease table against the agent's cores.
	procs := map[int]int{}
	for k, nd := range subs {
		rec, err := nd.Submitter().Get(jobs[k])
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range planHosts(t, net, rec.Plan) {
			procs[i] += p
		}
	}
	shared := 0
	for i, p := range procs {
		if p > cores {
			t.Errorf("agent %d runs %d processes of the two jobs on %d cores", i, p, cores)
		}
		if p > 0 && net.Nodes[i].Leases().Usage().Jobs == 2 {
			shared++
		}
	}
	for i, ls := range leasesOf(net) {
		held := 0
		for _, l := range ls {
			held += l.Cores
		}
		if held > cores || len(ls) > 2 {
			t.Errorf("agent %d: %d leases holding %d cores, limit J=2 and %d cores", i, len(ls), held, cores)
		}
	}
	t.Logf("processes per agent %v; %d agents hold leases of both jobs", procs, shared)
	for k, nd := range subs {
		if err := nd.Submitter().Cancel(jobs[k], "test over"); err != nil {
			t.Fatal(err)
		}
		if rec := awaitEnd(t, nd, jobs[k]); rec.State != job.Cancelled {
			t.Fatalf("job %d ended %s: %s", k, rec.State, rec.Reason)
		}
	}
	awaitNoLeases(t, net, 10*time.Second, "after both jobs were cancelled")
}

// cancelledDryRun holds leases on every agent with a dry run that cannot
// be satisfied, cancels it, and finds every lease table empty: leases
// last minutes by default, so only the cancels can have emptied them.
func cancelledDryRun(t *testing.T, net *Net, n int) {
	sub := net.Nodes[3]
	d := job.NewDescription("job.sh", nil, n)
	d.Deadline = time.Minute
	id := submit(t, sub, d, upload(t, sub, "exit 0"), true)
	awaitNet(t, net, "the dry run holds a lease on every agent", func() bool {
		return holding(net, id, indexes(len(net.Nodes))...)
	})
	if ttl := sub.Config().Services.Leases.DefaultTTL; ttl < time.Minute {
		t.Fatalf("lease TTL %v: too short to tell a cancel from an expiry", ttl)
	}
	if err := sub.Submitter().Cancel(id, "user changed their mind"); err != nil {
		t.Fatal(err)
	}
	rec := awaitEnd(t, sub, id)
	if rec.State != job.Cancelled {
		t.Fatalf("dry run ended %s (%s)", rec.State, rec.Reason)
	}
	awaitNoLeases(t, net, 5*time.Second, "after the dry run was cancelled")
}

// cancelledWhileStarting cancels a job as soon as it enters Starting, when
// the hosts have their commits and the spares are still reserved.
func cancelledWhileStarting(t *testing.T, net *Net) {
	sub := net.Nodes[4]
	d := job.NewDescription("job.sh", nil, 3)
	d.Strategy = job.Concentrate // one host runs it; the other offers are spares or cancelled
	id := submit(t, sub, d, upload(t, sub, "sleep 30"), false)
	ctx, stop := context.WithTimeout(context.Background(), time.Minute)
	defer stop()
	cancelled := false
	err := sub.Submitter().Watch(ctx, id, 0, func(u job.Update) error {
		if u.Kind == "state" && u.State == job.Starting && !cancelled {
			cancelled = true
			return sub.Submitter().Cancel(id, "cancelled while starting")
		}
		return nil
	})
	if err != nil || !cancelled {
		t.Fatalf("watch: %v (cancelled: %v)", err, cancelled)
	}
	rec := awaitEnd(t, sub, id)
	if rec.State != job.Cancelled {
		t.Fatalf("job ended %s: %s", rec.State, rec.Reason)
	}
	for _, e := range rec.History {
		if e.State == job.Running {
			t.Logf("the job got to running before the cancel: its spares were released then")
		}
	}
	if rec.Plan == nil || len(rec.Plan.Spares) == 0 {
		t.Fatalf("plan %+v kept no spare: nothing to leave behind", rec.Plan)
	}
	awaitNoLeases(t, net, 5*time.Second, "after a job was cancelled while starting")
}

// An offer the submitter keeps but never commits or cancels holds its slots
// only until the lease expires; then the slots are offered again. The
// first job cannot be satisfied and stays reserving, holding its offers,
// while its leases run out on the workers.
func TestLeasesExpireAndSlotsComeBack(t *testing.T) {
	const agents, cores, ttl = 4, 2, 1500 * time.Millisecond
	net := startLoopback(t, agents, func(_ int, cfg *node.Config) {
		e2eConfig(cfg, cores)
		cfg.Services.Leases.DefaultTTL, cfg.Services.Leases.MaxTTL = ttl, ttl
		// Two radii cover these agents; no later flood renews the offers.
		cfg.Services.Submitter.Schedule.MaxRadius = 2
	})
	connected(t, net, 2)
	sub := net.Nodes[0]
	d := job.NewDescription("job.sh", nil, agents*cores+1)
	d.Deadline = time.Minute
	held := submit(t, sub, d, upload(t, sub, "exit 0"), true)
	all := indexes(agents)
	awaitNet(t, net, "a lease on every agent", func() bool { return holding(net, held, all...) })
	leased := time.Now()
	awaitNoLeases(t, net, 10*ttl, "once the leases expired")
	if rec, err := sub.Submitter().Get(held); err != nil || rec.State != job.Reserving {
		t.Fatalf("the first job is %s (%v), want still reserving: its leases ended by expiry alone", rec.State, err)
	}
	t.Logf("leases gone %v after they were all in place (TTL %v)", time.Since(leased).Round(time.Millisecond), ttl)

	// The slots are free again: a second job gets every one of them.
	d = job.NewDescription("job.sh", nil, agents*cores)
	d.Strategy = job.Concentrate
	other := net.Nodes[1]
	rec := awaitEnd(t, other, submit(t, other, d, upload(t, other, "exit 0"), true))
	if rec.State != job.Done {
		t.Fatalf("second dry run ended %s: %s", rec.State, rec.Reason)
	}
	for i, o := range offerers(t, net, rec.Offers) {
		if o.Slots != cores {
			t.Errorf("agent %d offered %d slots, want all %d back", i, o.Slots, cores)
		}
	}
	if len(rec.Offers) != agents {
		t.Errorf("%d offers, want one from each of the %d agents", len(rec.Offers), agents)
	}
	if err := sub.Submitter().Cancel(held, "test over"); err != nil {
		t.Fatal(err)
	}
	if rec := awaitEnd(t, sub, held); rec.State != job.Cancelled {
		t.Fatalf("first job ended %s: %s", rec.State, rec.Reason)
	}
	awaitNoLeases(t, net, 5*time.Second, "at the end")
}

// A cancel that does not get through is sent again: a worker whose first
// cancel is lost (its stream reset before an answer) would otherwise keep
// its slots reserved for minutes, until the lease expires. The victim's
// lease handler drops the first request it gets and answers the others
// the way the worker does.
func TestLostCancelIsSentAgain(t *testing.T) {
	const agents, cores, victim = 3, 2, 1
	net := startLoopback(t, agents, func(_ int, cfg *node.Config) { e2eConfig(cfg, cores) })
	connected(t, net, 2)
	v := net.Nodes[victim]
	var mu sync.Mutex
	var cancels int
	v.Host().SetStreamHandler(proto.LeaseProtocol, func(s network.Stream) {
		var req proto.LeaseRequest
		if err := wire.ReadJSON(bufio.NewReader(s), proto.MaxLeaseSize, &req); err != nil {
			_ = s.Reset()
			return
		}
		mu.Lock()
		cancels++
		first := cancels == 1
		mu.Unlock()
		if first || req.Op != proto.OpCancel {
			_ = s.Reset() // lost on the way
			return
		}
		reply := proto.LeaseReply{OK: true}
		if _, err := v.Leases().End(req.Lease); err != nil {
			reply = proto.LeaseReply{Error: err.Error()}
		}
		_ = wire.WriteJSON(s, reply)
		_ = s.Close()
	})
	sub := net.Nodes[0]
	d := job.NewDescription("job.sh", nil, agents*cores)
	d.Strategy = job.Concentrate
	rec := awaitEnd(t, sub, submit(t, sub, d, upload(t, sub, "exit 0"), true))
	if rec.State != job.Done || !slices.ContainsFunc(rec.Offers, func(o job.Offer) bool { return o.Peer == v.ID() }) {
		t.Fatalf("dry run ended %s with %d offers (%s), want done with one from agent %d", rec.State, len(rec.Offers), rec.Reason, victim)
	}
	if ttl := sub.Config().Services.Leases.DefaultTTL; ttl < time.Minute {
		t.Fatalf("lease TTL %v: too short to tell a second cancel from an expiry", ttl)
	}
	awaitNoLeases(t, net, 5*time.Second, "after a dry run whose first cancel to one agent was lost")
	mu.Lock()
	defer mu.Unlock()
	if cancels != 2 {
		t.Fatalf("agent %d got %d cancels, want the lost one and its retry", victim, cancels)
	}
}
