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

	"github.com/zorilla-p2p/zorilla/node"
)

// publicAgents is how many agents the public network holds.
const publicAgents = 4

// natNet is one NAT topology under construction: what it made, in order,
// so that the test's cleanup removes it in reverse.
type natNet struct {
	t       *testing.T
	ctx     context.Context
	d       dockerCLI
	name    string // label value and name prefix
	tag     string
	dataDir string
	made    []string // containers, and networks as "net:NAME"
	gw      string   // how the gateways treat unasked inbound: one of gatewayModes
	quic    bool     // agents listen on QUIC too (as they do by default), not TCP alone
}

// How a gateway treats what comes unasked from outside: a home router
// drops it; a bare Linux NAT answers a SYN with a RST; and a gateway that
// itself listens on the port the homes' mappings use (4001) accepts it, as
// this test's gateways did before.
const (
	gatewayDrop   = "drop"
	gatewayRST    = "rst"
	gatewayListen = "listen"
)

var gatewayModes = []string{gatewayDrop, gatewayRST, gatewayListen}

func newNatNet(t *testing.T, ctx context.Context, tag, name string, v natVariant) *natNet {
	n := &natNet{t: t, ctx: ctx, d: dockerCLI{"docker"}, name: name, tag: tag, dataDir: t.TempDir(), gw: v.gateway, quic: v.quic}
	t.Cleanup(func() { // runs last: after the removal below
		for _, args := range [][]string{
			{"ps", "-aq", "--filter", "label=" + LabelTestnet + "=" + name},
			{"network", "ls", "-q", "--filter", "label=" + LabelTestnet + "=" + name},
		} {
			if left, err := n.d.run(context.Background(), args...); err != nil || left != "" {
				t.Errorf("left behind (%s): %q %v", args[0], left, err)
			}
		}
	})
	t.Cleanup(func() {
		for i := len(n.made) - 1; i >= 0; i-- {
			kind := "network"
			if !strings.HasPrefix(n.made[i], "net:") {
				kind = "container"
			}
			_, _ = n.d.run(context.Background(), kind, "rm", "-f", strings.TrimPrefix(n.made[i], "net:"))
		}
	})
	return n
}

// network creates a docker network (on subnet, or one docker picks) and
// returns its subnet and the host's address on it. An internal one
// forwards nothing off the bridge.
func (n *natNet) network(name string, internal bool, subnet string) (string, string) {
	n.t.Helper()
	args := []string{"network", "create", "--label", LabelTestnet + "=" + n.name}
	if internal {
		args = append(args, "--internal")
	}
	if subnet != "" {
		args = append(args, "--subnet", subnet, "--gateway", strings.TrimSuffix(subnet, "0/24")+"1")
	}
	if _, err := n.d.run(n.ctx, append(args, name)...); err != nil {
		n.t.Fatal(err)
	}
	n.made = append(n.made, "net:"+name)
	out, err := n.d.run(n.ctx, "network", "inspect", "-f", "{{(index .IPAM.Config 0).Subnet}} {{(index .IPAM.Config 0).Gateway}}", name)
	f := strings.Fields(out)
	if err != nil || len(f) != 2 {
		n.t.Fatalf("inspect %s: %q %v", name, out, err)
	}
	return f[0], f[1]
}

// listen is what an agent listens on, on ip: port 4001 of TCP, and of
// QUIC too when n.quic.
func (n *natNet) listen(ip string) []string {
	l := []string{"--listen", "/ip4/" + ip + "/tcp/4001"}
	if n.quic {
		l = append(l, "--listen", "/ip4/"+ip+"/udp/4001/quic-v1")
	}
	return l
}

// agent starts a container running an agent listening on listen, and
// returns its data dir on the host and its pid. ZORILLA_NAT_LOG, if set,
// is the agents' GOLOG_LOG_LEVEL (their logs: docker logs).
func (n *natNet) agent(cname, net string, listen, extra []string, flags ...string) (dir string, pid int) {
	n.t.Helper()
	dir = filepath.Join(n.dataDir, cname)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		n.t.Fatal(err)
	}
	args := append([]string{"run", "-d", "--name", cname, "--network", net, "--label", LabelTestnet + "=" + n.name,
		"-v", dir + ":" + containerDataDir, "--stop-timeout", "2"}, extra...)
	if lvl := os.Getenv("ZORILLA_NAT_LOG"); lvl != "" {
		args = append(args, "-e", "GOLOG_LOG_LEVEL="+lvl)
	}
	args = append(append(args, n.tag, "agent", "--data-dir", containerDataDir), listen...)
	args = append(args, "--mdns=false", "--open", "--cores", "1", "--max-procs", "1")
	if _, err := n.d.run(n.ctx, append(args, flags...)...); err != nil {
		n.t.Fatal(err)
	}
	n.made = append(n.made, cname)
	pid, err := n.d.pid(n.ctx, cname)
	if err != nil {
		n.t.Fatal(err)
	}
	return dir, pid
}

// ip is a container's address on a network.
func (n *natNet) ip(cname, net string) string {
	n.t.Helper()
	ip, err := n.d.run(n.ctx, "inspect", "-f", "{{(index .NetworkSettings.Networks \""+net+"\").IPAddress}}", cname)
	if err != nil || ip == "" {
		n.t.Fatalf("address of %s on %s: %q %v", cname, net, ip, err)
	}
	return ip
}

// gateway starts the NAT gateway of a home: a container on the home and
// the public network that forwards and masquerades what leaves the home
// (Linux keeps the source port where it is free, and maps one inside
// address and port to one outside port whatever the destination: what
// hole punching needs), and treats what comes unasked from outside as
// n.gw says: a home router drops it (an unasked SYN then gets no RST that
// would abort a hole punch). The rules go into its namespace from the
// host; an idle agent of another network, listening on loopback only
// (on every address with gatewayListen), keeps it running. It returns the
// gateway's address in the home and on the public network, and its pid.
func (n *natNet) gateway(home, subnet, pubNet string) (string, string, int) {
	n.t.Helper()
	cname, listen := n.name+"-gw-"+home, n.listen("127.0.0.1")
	if n.gw == gatewayListen {
		listen = n.listen("0.0.0.0")
	}
	_, pid := n.agent(cname, home, listen, []string{"--cap-add", "NET_ADMIN", "--sysctl", "net.ipv4.ip_forward=1"}, "--network", "gateway")
	if _, err := n.d.run(n.ctx, "network", "connect", pubNet, cname); err != nil {
		n.t.Fatal(err)
	}
	rules := [][]string{{"-t", "nat", "-A", "POSTROUTING", "-s", subnet, "!", "-d", subnet, "-j", "MASQUERADE"}}
	if n.gw == gatewayDrop {
		rules = append(rules,
			[]string{"-A", "INPUT", "!", "-s", subnet, "-m", "conntrack", "--ctstate", "NEW,INVALID", "-j", "DROP"},
			[]string{"-A", "FORWARD", "-d", subnet, "-m", "conntrack", "--ctstate", "NEW,INVALID", "-j", "DROP"})
	}
	for _, rule := range rules {
		if _, err := nsenterRun(n.ctx, pid, append([]string{"iptables"}, rule...)...); err != nil {
			n.t.Fatal(err)
		}
	}
	return n.ip(cname, home), n.ip(cname, pubNet), pid
}

// natVariant is how a NAT topology's gateways and agents behave.
type natVariant struct {
	gateway string // one of gatewayModes
	quic    bool   // agents listen on QUIC too, not TCP alone
}

func (v natVariant) String() string {
	if v.quic {
		return v.gateway + "/tcp+quic"
	}
	return v.gateway + "/tcp"
}

// natTopology builds the two homes, their gateways (as v says) and the
// public network (on pubSubnet, or one docker picks), waits until the homes' agents are
// neighbours and (on a public range) for a direct connection, runs a job
// across both homes, and reports how the homes' agents ended up connected.
func natTopology(t *testing.T, ctx context.Context, tag, bin, pubSubnet string, v natVariant) natRun {
	n := newNatNet(t, ctx, tag, fmt.Sprintf("zn%d%s", os.Getpid()%100000, strings.ReplaceAll(strings.TrimSuffix(pubSubnet, ".0/24"), ".", "")), v)
	// The public network is internal (nothing leaves it). The homes are
	// not: docker drops what an internal bridge forwards to an address
	// outside its subnet, which is all a home sends through its gateway.
	// Their agents' default route is the gateway, set before they dial.
	pubNet, h1Net, h2Net := n.name+"-pub", n.name+"-h1", n.name+"-h2"
	_, pubGW := n.network(pubNet, true, pubSubnet)
	h1Sub, _ := n.network(h1Net, false, "")
	h2Sub, _ := n.network(h2Net, false, "")

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

	listen := n.listen("0.0.0.0")
	joinPublic := []string{"--network", "nat-test", "--bootstrap", "public", "--public-bootstrap", public}
	// Several public agents: each relays, and each is one more peer that
	// tells the homes the address it sees them at (libp2p advertises an
	// observed address once four distinct IPs report it).
	for i := range publicAgents {
		n.agent(fmt.Sprintf("%s-relay%d", n.name, i), pubNet, listen, nil, append(joinPublic, "--reachability", "public")...)
	}
	gw1, pub1, gwPid1 := n.gateway(h1Net, h1Sub, pubNet)
	gw2, pub2, gwPid2 := n.gateway(h2Net, h2Sub, pubNet)
	homeAgent := func(home, gw string) (string, int) {
		dir, pid := n.agent(n.name+"-a-"+home, home, listen, nil, append(joinPublic, "--label", "home")...)
		if _, err := nsenterRun(ctx, pid, "ip", "route", "replace", "default", "via", gw); err != nil {
			t.Fatal(err)
		}
		return dir, pid
	}
	start := time.Now()
	a1, _ := homeAgent(h1Net, gw1)
	a2, _ := homeAgent(h2Net, gw2)
	var r natRun
	defer func() {
		if t.Failed() || os.Getenv("ZORILLA_NAT_LOG") != "" {
			for _, c := range []string{n.name + "-a-" + h1Net, n.name + "-a-" + h2Net} {
				out, _ := runTool(context.Background(), "sh", "-c", "docker logs "+c+" 2>&1 | tail -n 60")
				t.Logf("%s (home %s via %s, home 2 at %s):\n%s", c, h1Net, pub1, pub2, out)
			}
			for i, pid := range []int{gwPid1, gwPid2} {
				out, _ := nsenterRun(context.Background(), pid, "sh", "-c", "grep -e "+pub1+" /proc/net/nf_conntrack | grep -e "+pub2)
				t.Logf("gateway %d's tracked flows between the gateways:\n%s", i+1, out)
			}
		}
	}()

	// The two homes' agents become neighbours.
	id2 := agentID(t, ctx, a2)
	r.conn = awaitConn(t, ctx, a1, id2, 2*time.Minute, func(c string) bool { return c != "" && c != node.ConnNone })
	if r.conn == "" {
		t.Fatalf("the homes' agents never became neighbours: %s", describeAgents(n.dataDir))
	}
	r.neighbours = time.Since(start)
	t.Logf("the two homes' agents are neighbours %v after they started, connection %s", r.neighbours.Round(time.Millisecond), r.conn)
	if pubSubnet != "" { // hole punching starts as the relayed connection opens
		if awaitConn(t, ctx, a1, id2, 30*time.Second, func(c string) bool { return c == node.ConnDirect }) == node.ConnDirect {
			r.direct = time.Since(start)
			t.Logf("direct %v after they started", r.direct.Round(time.Millisecond))
		}
	}

	// A job spanning both homes, submitted in home 1.
	r.job = runHomesJob(t, ctx, a1, bin)
	if pubSubnet == "" && awaitConn(t, ctx, a1, id2, 0, func(string) bool { return true }) == node.ConnRelayed {
		t.Logf("an MPICH job across the relayed homes is refused: %s", refusedHomesPMIJob(t, ctx, a1, bin, id2))
	}
	var addrs1, addrs2 string
	r.reach, addrs1, addrs2 = awaitReach(t, ctx, a1, a2)
	r.conn = awaitConn(t, ctx, a1, id2, 0, func(string) bool { return true })
	// A direct connection of home 1's agent to home 2's can only be a flow
	// through both NATs: from home 1's agent to home 2's gateway's public
	// address, answered (gateway 1's connection tracking shows it).
	r.via, err = natFlows(ctx, gwPid1, n.ip(n.name+"-a-"+h1Net, h1Net), pub2)
	if err != nil {
		t.Fatal(err)
	}
	if r.conn == node.ConnDirect && r.via == "" {
		t.Errorf("home 1's agent is direct to home 2's, but gateway 1 has no answered flow from it to home 2's gateway %s", pub2)
	}
	t.Logf("the homes' reachability: %s; home 1 advertises %s, home 2 %s", r.reach, addrs1, addrs2)
	t.Logf("job across the two homes %s; their connection at the end: %s (%s)", r.job, r.conn, r.via)
	return r
}
