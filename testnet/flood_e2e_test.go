package testnet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/node"
	"github.com/zorilla-p2p/zorilla/overlay"
)

// Floods end to end, with a growing radius over real agents, the
// owner policy deciding on each of them. Lease tests are in
// lease_e2e_test.go, bad input in flood_badinput_e2e_test.go.

// On three sites (1 ms inside, 20 and 40 ms between), a job one site can
// hold is placed on the submitter's own site: its neighbours there answer
// first and head the latency-sorted rlist.
func TestFloodLocalityThreeSites(t *testing.T) {
	const perSite, cores, n = 8, 4, 12 // a site holds 32 slots; n takes 3 hosts
	topo := ThreeSites(perSite)
	for i := range topo.Sites {
		topo.Sites[i].Cores = cores
	}
	net := startMocknet(t, topo, func(_ int, cfg *node.Config) { e2eConfig(cfg, cores) })
	k := overlay.FastConfig().K
	awaitNet(t, net, "agent 0's nearest neighbours all in its site", func() bool {
		near := 0
		for _, p := range net.Nodes[0].Overlay().Peers() {
			if p.Near && net.SiteOf(net.Index(p.ID)) == 0 {
				near++
			}
		}
		return near == k && net.Graph().StronglyConnected()
	})
	sub := net.Nodes[0]
	d := job.NewDescription("job.sh", nil, n)
	d.Strategy = job.Concentrate
	rec := awaitEnd(t, sub, submit(t, sub, d, upload(t, sub, "exit 0"), false))
	if rec.State != job.Done {
		t.Fatalf("job ended %s: %s", rec.State, rec.Reason)
	}
	hosts := planHosts(t, net, rec.Plan)
	for i := range hosts {
		if net.SiteOf(i) != 0 {
			t.Errorf("plan host agent %d is in site %s, the submitter in a", i, topo.Sites[net.SiteOf(i)].Name)
		}
	}
	// The head of the rlist, as many offers as the plan uses, is in site a.
	for k, o := range rec.Offers[:min(len(hosts), len(rec.Offers))] {
		if i := net.Index(o.Peer); net.SiteOf(i) != 0 {
			t.Errorf("rlist[%d] is agent %d of site %d (RTT %v)", k, i, net.SiteOf(i), o.RTT)
		}
	}
	bySite := make([][]time.Duration, len(topo.Sites))
	for _, o := range rec.Offers {
		s := net.SiteOf(net.Index(o.Peer))
		bySite[s] = append(bySite[s], o.RTT.Round(100*time.Microsecond))
	}
	t.Logf("%d offers, RTTs by site %v; plan on agents %v; submitter flooded %d radii",
		len(rec.Offers), bySite, hosts, sub.Flooder().Stats().Originated)
}

// A job that needs every slot of the network cannot be satisfied by the
// submitter's neighbours: later floods with a larger radius find the rest,
// and all n slots are placed.
func TestFloodRadiusGrowsUntilEnough(t *testing.T) {
	const agents, cores = 12, 2
	ov := overlay.FastConfig()
	ov.K, ov.Random = 2, 1 // a sparse graph: radius 1 reaches a few agents
	net := startMocknet(t, Topology{Sites: []Site{{Name: "lan", Hosts: agents, Cores: cores}}},
		func(_ int, cfg *node.Config) { e2eConfig(cfg, cores); cfg.Overlay = ov })
	connected(t, net, ov.K)
	sub := net.Nodes[0]
	if nb := len(sub.Overlay().Neighbours()); nb+1 >= agents {
		t.Fatalf("the submitter has %d neighbours: radius 1 already reaches all %d agents", nb, agents)
	}
	d := job.NewDescription("job.sh", nil, agents*cores)
	d.Strategy = job.Concentrate
	rec := awaitEnd(t, sub, submit(t, sub, d, upload(t, sub, "exit 0"), false))
	if rec.State != job.Done {
		t.Fatalf("job ended %s: %s", rec.State, rec.Reason)
	}
	placed := 0
	for _, procs := range planHosts(t, net, rec.Plan) {
		placed += procs
	}
	if placed != agents*cores || len(rec.Plan.Hosts) != agents {
		t.Fatalf("%d processes on %d hosts, want %d on %d", placed, len(rec.Plan.Hosts), agents*cores, agents)
	}
	// The flood samples say at which radius the offers first held n slots:
	// not radius 1. (The submitter's count of floods cannot say it: the
	// extra radius flooded once offers are enough is skipped when every
	// agent it knows has answered.)
	enoughAt := 0
	for _, s := range rec.Flood {
		if s.Slots >= s.Need {
			enoughAt = s.Radius
			break
		}
	}
	if enoughAt < 2 {
		t.Fatalf("offers held n x r slots at radius %d (samples %+v): radius > 1 was needed", enoughAt, rec.Flood)
	}
	t.Logf("all %d slots placed once radius %d was flooded (%d floods in all); the submitter had %d neighbours",
		placed, enoughAt, sub.Flooder().Stats().Originated, len(sub.Overlay().Neighbours()))
}

// The owner policy end to end: an agent that denies the submitter is
// reached by its flood but never offers; an agent with P=1 offers one slot;
// agents whose J is used up by another job's leases offer nothing.
func TestFloodPolicyEndToEnd(t *testing.T) {
	const (
		submitter = 0
		denier    = 1 // denies the submitter
		oneProc   = 2 // P = 1 on 4 cores
		twoJobs   = 5 // J = 2: the only agent with room for a second job
		other     = 4 // submits the job that fills everyone's J
		agents    = 6
	)
	key, subID := newIdentity(t)
	dataDir := t.TempDir()
	writeIdentity(t, dataDir, key)
	denyFile := filepath.Join(t.TempDir(), "deny")
	if err := os.WriteFile(denyFile, []byte("# the submitter of the test\n"+subID.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	net := startLoopback(t, agents, func(i int, cfg *node.Config) {
		e2eConfig(cfg, 4)
		switch i {
		case submitter:
			cfg.DataDir = dataDir // its identity is the one denied
		case denier:
			cfg.DenyFile = denyFile
		case oneProc:
			cfg.MaxProcs = 1
		case twoJobs:
			cfg.MaxJobs, cfg.MaxProcs = 2, 2
		}
	})
	if net.Nodes[submitter].ID() != subID {
		t.Fatalf("submitter runs as %s, want the identity written to its data dir %s", net.Nodes[submitter].ID(), subID)
	}
	connected(t, net, 2)
	sub := net.Nodes[submitter]
	prog := upload(t, sub, "exit 0")

	// More than the network holds: the flood grows to every agent, and at
	// the deadline the record lists every offer it got.
	d := job.NewDescription("job.sh", nil, 4*agents+1)
	d.Deadline = 3 * time.Second
	rec := awaitEnd(t, sub, submit(t, sub, d, prog, true))
	if rec.State != job.Failed || !strings.Contains(rec.Reason, "not enough resources") {
		t.Fatalf("job ended %s (%s), want failed: not enough resources", rec.State, rec.Reason)
	}
	got := offerers(t, net, rec.Offers)
	if _, ok := got[denier]; ok {
		t.Fatalf("agent %d denies the submitter but offered: %+v", denier, got[denier])
	}
	if st := net.Nodes[denier].Flooder().Stats(); st.Delivered == 0 {
		t.Fatalf("the denying agent never received the advert (stats %+v): the test shows nothing", st)
	}
	want := map[int]int{submitter: 4, oneProc: 1, 3: 4, other: 4, twoJobs: 2}
	for i, slots := range want {
		if got[i].Slots != slots {
			t.Errorf("agent %d offered %d slots, want %d (P=%d)", i, got[i].Slots, slots, net.Nodes[i].Config().MaxProcs)
		}
	}
	awaitNoLeases(t, net, 5*time.Second, "after the failed dry run")

	// J: another job's leases fill every agent with J=1; only the agent
	// with J=2 still offers.
	filler := submit(t, net.Nodes[other], job.NewDescription("job.sh", nil, 4*agents+1),
		upload(t, net.Nodes[other], "exit 0"), true)
	busy := indexes(agents, twoJobs)
	awaitNet(t, net, "the filler job leased on every agent", func() bool { return holding(net, filler, indexes(agents)...) })
	two := job.NewDescription("job.sh", nil, 2)
	two.Strategy = job.Concentrate // enough with one host: no need to flood the whole schedule
	rec = awaitEnd(t, sub, submit(t, sub, two, prog, true))
	if rec.State != job.Done {
		t.Fatalf("second dry run ended %s: %s", rec.State, rec.Reason)
	}
	got = offerers(t, net, rec.Offers)
	if len(got) != 1 || got[twoJobs].Slots != 2 {
		t.Fatalf("offers from agents %v, want only agent %d (J=2) with 2 slots; agents %v are at J=1", keys(got), twoJobs, busy)
	}
	if err := net.Nodes[other].Submitter().Cancel(filler, "test over"); err != nil {
		t.Fatal(err)
	}
	if rec := awaitEnd(t, net.Nodes[other], filler); rec.State != job.Cancelled {
		t.Fatalf("filler ended %s: %s", rec.State, rec.Reason)
	}
	awaitNoLeases(t, net, 5*time.Second, "after the filler's cancel")
}

func keys(m map[int]job.Offer) []int {
	var out []int
	for i := range m {
		out = append(out, i)
	}
	return out
}

// newIdentity makes an Ed25519 key and its peer ID.
func newIdentity(t *testing.T) (crypto.PrivKey, peer.ID) {
	t.Helper()
	key, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return key, id
}

// writeIdentity stores key where an agent with data dir dir reads it.
func writeIdentity(t *testing.T, dir string, key crypto.PrivKey) {
	t.Helper()
	b, err := crypto.MarshalPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, node.IdentityFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
}
