package docker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	dht "github.com/libp2p/go-libp2p-kad-dht"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/node"
)

// TestDockerNAT: two homes, each an internal docker network behind its
// own NAT gateway (a container on the home and the public network,
// masquerading: the rule is put into its namespace from the host, so the
// image needs nothing), and a public network with one public agent and a
// stand-in public DHT (a plain kad-dht server run by the test on the public
// bridge's host address). The agent of each home joins with --bootstrap
// public; they find each other, get relay reservations on the public
// agent, hole-punch where the NATs let them, and run a job spanning both
// homes. The test reports whether their connection ended direct or
// relayed, and removes every container and network it made.
func TestDockerNAT(t *testing.T) {
	needDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	tag := "zorilla-testnet:test"
	bin := buildForTest(t, ctx, tag)
	// The public network on a private range (what a lab has), then on a
	// public one (11.77.x.0/24, internal to this machine: nothing leaves
	// it), where libp2p's hole punching has public addresses to work with.
	t.Run("private range", func(t *testing.T) { natTopology(t, ctx, tag, bin, "") })
	t.Run("public range", func(t *testing.T) {
		natTopology(t, ctx, tag, bin, fmt.Sprintf("11.77.%d.0/24", os.Getpid()%250))
	})
}

// natTopology builds the two homes, the gateways and the public network
// (on pubSubnet, or one docker picks), runs the job, and reports how the
// homes' agents ended up connected.
func natTopology(t *testing.T, ctx context.Context, tag, bin, pubSubnet string) {
	d := dockerCLI{"docker"}
	name := fmt.Sprintf("zn%d%d", os.Getpid()%100000, len(pubSubnet))
	t.Cleanup(func() { // runs last: after the removal below
		for _, kind := range []string{"ps", "network"} {
			args := []string{kind, "ls", "-q", "--filter", "label=" + LabelTestnet + "=" + name}
			if kind == "ps" {
				args = []string{"ps", "-aq", "--filter", "label=" + LabelTestnet + "=" + name}
			}
			if left, err := d.run(context.Background(), args...); err != nil || left != "" {
				t.Errorf("left behind (%s): %q %v", kind, left, err)
			}
		}
	})
	var made []string // containers, then networks, removed in reverse
	t.Cleanup(func() {
		for i := len(made) - 1; i >= 0; i-- {
			kind := "network"
			if !strings.HasPrefix(made[i], "net:") {
				kind = "container"
			}
			_, _ = d.run(context.Background(), kind, "rm", "-f", strings.TrimPrefix(made[i], "net:"))
		}
	})
	// The public network is internal (nothing leaves it). The homes are
	// not: docker drops what an internal bridge forwards to an address
	// outside its subnet, which is all a home sends through its gateway.
	// Their agents' default route is the gateway, set before they dial.
	network := func(n string, internal bool, subnet string) (string, string) {
		t.Helper()
		args := []string{"network", "create", "--label", LabelTestnet + "=" + name}
		if internal {
			args = append(args, "--internal")
		}
		if subnet != "" {
			args = append(args, "--subnet", subnet, "--gateway", strings.TrimSuffix(subnet, "0/24")+"1")
		}
		if _, err := d.run(ctx, append(args, n)...); err != nil {
			t.Fatal(err)
		}
		made = append(made, "net:"+n)
		out, err := d.run(ctx, "network", "inspect", "-f", "{{(index .IPAM.Config 0).Subnet}} {{(index .IPAM.Config 0).Gateway}}", n)
		f := strings.Fields(out)
		if err != nil || len(f) != 2 {
			t.Fatalf("inspect %s: %q %v", n, out, err)
		}
		return f[0], f[1]
	}
	pubNet, h1Net, h2Net := name+"-pub", name+"-h1", name+"-h2"
	_, pubGW := network(pubNet, true, pubSubnet)
	h1Sub, _ := network(h1Net, false, "")
	h2Sub, _ := network(h2Net, false, "")

	// The stand-in public DHT, on the public bridge's host address.
	dh, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/" + pubGW + "/tcp/0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dh.Close() })
	standin, err := dht.New(ctx, dh, dht.Mode(dht.ModeServer))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = standin.Close() })
	public := fmt.Sprintf("%s/p2p/%s", dh.Addrs()[0], dh.ID())

	dataDir := t.TempDir()
	run := func(cname, net string, extra []string, agent ...string) (dir string, pid int) {
		t.Helper()
		dir = filepath.Join(dataDir, cname)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		args := append([]string{"run", "-d", "--name", cname, "--network", net, "--label", LabelTestnet + "=" + name,
			"-v", dir + ":" + containerDataDir, "--stop-timeout", "2"}, extra...)
		args = append(args, tag, "agent", "--data-dir", containerDataDir, "--listen", "/ip4/0.0.0.0/tcp/4001",
			"--mdns=false", "--open", "--cores", "1", "--max-procs", "1")
		if _, err := d.run(ctx, append(args, agent...)...); err != nil {
			t.Fatal(err)
		}
		made = append(made, cname)
		if pid, err = d.pid(ctx, cname); err != nil {
			t.Fatal(err)
		}
		return dir, pid
	}
	joinPublic := []string{"--network", "nat-test", "--bootstrap", "public", "--public-bootstrap", public}
	// Several public agents: each relays, and libp2p trusts an address it
	// is observed at only once several peers report it (hole punching
	// needs the homes' observed public addresses).
	for i := range publicAgents {
		run(fmt.Sprintf("%s-relay%d", name, i), pubNet, nil, append(joinPublic, "--reachability", "public")...)
	}
	// The gateways: an idle agent of another network keeps each running.
	gateway := func(home, subnet string) string {
		cname := name + "-gw-" + home
		_, pid := run(cname, home, []string{"--cap-add", "NET_ADMIN", "--sysctl", "net.ipv4.ip_forward=1"}, "--network", "gateway")
		if _, err := d.run(ctx, "network", "connect", pubNet, cname); err != nil {
			t.Fatal(err)
		}
		if _, err := nsenterRun(ctx, pid, "iptables", "-t", "nat", "-A", "POSTROUTING", "-s", subnet, "!", "-d", subnet, "-j", "MASQUERADE"); err != nil {
			t.Fatal(err)
		}
		ip, err := d.run(ctx, "inspect", "-f", "{{(index .NetworkSettings.Networks \""+home+"\").IPAddress}}", cname)
		if err != nil {
			t.Fatal(err)
		}
		return ip
	}
	gw1, gw2 := gateway(h1Net, h1Sub), gateway(h2Net, h2Sub)
	homeAgent := func(home, gw string) string {
		dir, pid := run(name+"-a-"+home, home, nil, append(joinPublic, "--label", "home")...)
		if _, err := nsenterRun(ctx, pid, "ip", "route", "replace", "default", "via", gw); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	start := time.Now()
	a1, a2 := homeAgent(h1Net, gw1), homeAgent(h2Net, gw2)

	// The two homes' agents become neighbours.
	id2 := agentID(t, ctx, a2)
	waitCtx, stopWait := context.WithTimeout(ctx, 2*time.Minute)
	defer stopWait()
	var conn string
	for conn == "" {
		cl, err := node.Dial(a1)
		if err == nil {
			info, perr := cl.Peers(ctx)
			cl.Close()
			for _, n := range info.Neighbours {
				if perr == nil && n.ID == id2 {
					conn = n.Conn
				}
			}
		}
		select {
		case <-waitCtx.Done():
			t.Fatalf("the homes' agents never became neighbours: %s", describeAgents(dataDir))
		case <-time.After(200 * time.Millisecond):
		}
	}
	t.Logf("the two homes' agents are neighbours %v after they started, connection %s", time.Since(start).Round(time.Millisecond), conn)

	// A job spanning both homes, submitted in home 1.
	cl, err := node.Dial(a1)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	b, err := cl.Upload(ctx, filepath.Join(bin, "examples", "stencil"))
	if err != nil {
		t.Fatal(err)
	}
	jd := job.NewDescription("stencil", []string{"-iters", "50", "-delay", "5ms", "-block", "10000"}, 2)
	jd.Strategy, jd.Require.Labels = job.Spread, []string{"home"}
	id, err := cl.Submit(ctx, node.SubmitRequest{Description: jd, Program: job.FileRef{Name: "stencil", Hash: b.Hash, Size: b.Size}})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := awaitJob(ctx, a1, id)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := os.ReadFile(filepath.Join(a1, "jobs", string(id), "stdout"))
	if rec.State != job.Done || !strings.Contains(string(out), "verified") {
		t.Fatalf("job across the homes ended %s (%s):\n%s", rec.State, rec.Reason, out)
	}
	if info, err := cl.Peers(ctx); err == nil {
		for _, n := range info.Neighbours {
			if n.ID == id2 {
				conn = n.Conn
			}
		}
	}
	// libp2p punches holes only with public observed addresses: on private
	// ranges the homes stay relayed; on a public one they may go direct.
	t.Logf("job across the two homes done, verified; their connection at the end: %s", conn)
}

// publicAgents is how many agents the public network holds.
const publicAgents = 4

// agentID waits for the agent of data dir dir to answer and returns its ID.
func agentID(t *testing.T, ctx context.Context, dir string) peer.ID {
	t.Helper()
	for {
		if cl, err := node.Dial(dir); err == nil {
			info, err := cl.ID(ctx)
			cl.Close()
			if err == nil {
				return info.ID
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("agent of %s never answered", dir)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// describeAgents says what each agent under dir reports of itself and its
// neighbours, for a failure message.
func describeAgents(dir string) string {
	var b strings.Builder
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		cl, err := node.Dial(filepath.Join(dir, e.Name()))
		if err != nil {
			fmt.Fprintf(&b, "\n%s: %v", e.Name(), err)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		id, ierr := cl.ID(ctx)
		peers, perr := cl.Peers(ctx)
		cancel()
		cl.Close()
		fmt.Fprintf(&b, "\n%s: %+v (%v); neighbours %+v (%v)", e.Name(), id, ierr, peers.Neighbours, perr)
		if id.Rendezvous != nil {
			fmt.Fprintf(&b, " rendezvous %+v", *id.Rendezvous)
		}
	}
	return b.String()
}
