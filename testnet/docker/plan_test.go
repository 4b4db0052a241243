package docker

import (
	"math/rand/v2"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

func threeSites(t *testing.T) Layout {
	t.Helper()
	l, err := ParseSitesString("nancy 3 x 4\nlyon 2 x 2 at 10 ms\nrennes 2 x 2 at 20 ms")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func fakeIDs(n int) []peer.ID {
	ids := make([]peer.ID, n)
	for i := range ids {
		ids[i] = peer.ID("peer" + string(rune('A'+i)))
	}
	return ids
}

func TestAddrPlan(t *testing.T) {
	a := addrPlanAt(90)
	if a.Sites.String() != "10.90.0.0/16" || a.WAN.String() != "10.91.0.0/16" {
		t.Fatalf("plan %+v", a)
	}
	if got := a.SiteSubnet(2).String(); got != "10.90.2.0/24" {
		t.Fatalf("site subnet %s", got)
	}
	if got := a.WANSubnet(3).String(); got != "10.91.3.0/24" {
		t.Fatalf("wan subnet %s", got)
	}
	if got := hostAddr(a.WANSubnet(3), 0); got != netip.MustParseAddr("10.91.3.2") {
		t.Fatalf("first host %s, want .2 (.1 is the gateway)", got)
	}
	if got := hostAddr(a.SiteSubnet(1), MaxHostsPerSite-1); got != netip.MustParseAddr("10.90.1.251") {
		t.Fatalf("last host %s", got)
	}
	if got := gateway(a.WAN); got != netip.MustParseAddr("10.91.0.1") {
		t.Fatalf("gateway %s", got)
	}
	used := []netip.Prefix{netip.MustParsePrefix("10.91.7.0/24")}
	if !overlapsAny(a.WAN, used) || overlapsAny(a.Sites, used) {
		t.Fatal("overlap check wrong")
	}
}

func TestPlanContainers(t *testing.T) {
	l := threeSites(t)
	a := addrPlanAt(90)
	cs := planContainers("zt", "/tmp/zt", l, a, fakeIDs(7), rand.New(rand.NewPCG(1, 2)))
	if len(cs) != 7 {
		t.Fatalf("%d containers", len(cs))
	}
	c := cs[4] // lyon-1
	if c.Name != "zt-lyon-1" || c.Short() != "lyon-1" || c.Site != 1 || c.Cores != 2 ||
		c.SiteIP.String() != "10.90.1.3" || c.WANIP.String() != "10.91.1.3" || c.DataDir != "/tmp/zt/lyon-1" {
		t.Fatalf("lyon-1 planned as %+v", c)
	}
	if cs[0].Bootstrap != "" {
		t.Fatalf("the first container bootstraps from %q", cs[0].Bootstrap)
	}
	for i, c := range cs[1:] {
		// Each joins through one earlier container's wan address.
		found := false
		for _, e := range cs[:i+1] {
			found = found || c.Bootstrap == e.Addr()
		}
		if !found {
			t.Fatalf("%s bootstraps from %q, not an earlier container", c.Name, c.Bootstrap)
		}
	}
	again := planContainers("zt", "/tmp/zt", l, a, fakeIDs(7), rand.New(rand.NewPCG(1, 2)))
	if !reflect.DeepEqual(cs, again) {
		t.Fatal("same seed, different plan")
	}
	want := "/ip4/10.91.0.3/tcp/4001/p2p/" + cs[1].PeerID.String()
	if cs[1].Addr() != want {
		t.Fatalf("addr %s, want %s", cs[1].Addr(), want)
	}
}

func TestAgentArgs(t *testing.T) {
	c := Container{SiteName: "lyon", Cores: 2, Bootstrap: "/ip4/10.91.0.2/tcp/4001/p2p/X"}
	got := strings.Join(c.AgentArgs(false, []string{"--log-level", "debug"}), " ")
	want := "agent --data-dir /data --listen /ip4/0.0.0.0/tcp/4001 " +
		"--cores 2 --max-procs 2 --open --label site=lyon --web 0.0.0.0:4080 --bootstrap /ip4/10.91.0.2/tcp/4001/p2p/X --log-level debug"
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	c.Bootstrap = ""
	got = strings.Join(c.AgentArgs(true, nil), " ")
	if strings.Contains(got, "bootstrap") || !strings.Contains(got, "--listen /ip4/0.0.0.0/tcp/4001 --listen /ip4/0.0.0.0/udp/4001/quic-v1 ") {
		t.Fatalf("first agent with QUIC: %s", got)
	}
}

func TestDelayRules(t *testing.T) {
	l := threeSites(t)
	a := addrPlanAt(90)
	got := delayRules(l, a, 1, time.Millisecond) // from lyon
	want := []Rule{
		{Site: "nancy", Dst: []netip.Prefix{a.SiteSubnet(0), a.WANSubnet(0)}, Queue: 100, Delay: 5 * time.Millisecond},
		{Site: "lyon", Dst: []netip.Prefix{a.SiteSubnet(1), a.WANSubnet(1)}, Queue: 101, Delay: 500 * time.Microsecond},
		{Site: "rennes", Dst: []netip.Prefix{a.SiteSubnet(2), a.WANSubnet(2)}, Queue: 102, Delay: 10 * time.Millisecond},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	// Without local latency, nothing is added inside the site.
	if got := delayRules(l, a, 0, 0); len(got) != 2 || got[0].Site != "lyon" || got[1].Site != "rennes" {
		t.Fatalf("no local RTT: %+v", got)
	}
	if q := queueDelays(want); !reflect.DeepEqual(q, []QueueDelay{{100, 5 * time.Millisecond}, {101, 500 * time.Microsecond}, {102, 10 * time.Millisecond}}) {
		t.Fatalf("queues %+v", q)
	}
}

func TestShapingCommands(t *testing.T) {
	rules := []Rule{
		{Site: "nancy", Dst: []netip.Prefix{netip.MustParsePrefix("10.90.0.0/24"), netip.MustParsePrefix("10.91.0.0/24")}, Queue: 100, Delay: 5250 * time.Microsecond},
		{Site: "lyon", Dst: []netip.Prefix{netip.MustParsePrefix("10.90.1.0/24")}, Queue: 101, Delay: 500 * time.Microsecond},
	}
	join := func(cmds [][]string) string {
		var b strings.Builder
		for _, c := range cmds {
			b.WriteString(strings.Join(c, " ") + "\n")
		}
		return b.String()
	}
	wantIPT := `iptables -w 5 -A OUTPUT -d 10.90.0.0/24 -j NFQUEUE --queue-num 100 --queue-bypass
iptables -w 5 -A OUTPUT -d 10.91.0.0/24 -j NFQUEUE --queue-num 100 --queue-bypass
iptables -w 5 -A OUTPUT -d 10.90.1.0/24 -j NFQUEUE --queue-num 101 --queue-bypass
`
	if got := join(iptablesCommands(rules)); got != wantIPT {
		t.Fatalf("iptables:\n%s\nwant\n%s", got, wantIPT)
	}
	wantTC := `tc qdisc replace dev eth1 root handle 1: htb default 0
tc class add dev eth1 parent 1: classid 1:10 htb rate 10gbit
tc qdisc add dev eth1 parent 1:10 handle 10: netem delay 5250us limit 10000
tc filter add dev eth1 parent 1: protocol ip prio 1 u32 match ip dst 10.90.0.0/24 flowid 1:10
tc filter add dev eth1 parent 1: protocol ip prio 1 u32 match ip dst 10.91.0.0/24 flowid 1:10
tc class add dev eth1 parent 1: classid 1:11 htb rate 10gbit
tc qdisc add dev eth1 parent 1:11 handle 11: netem delay 500us limit 10000
tc filter add dev eth1 parent 1: protocol ip prio 1 u32 match ip dst 10.90.1.0/24 flowid 1:11
`
	if got := join(netemCommands("eth1", rules)); got != wantTC {
		t.Fatalf("tc:\n%s\nwant\n%s", got, wantTC)
	}
}

func TestParseIPAddr(t *testing.T) {
	out := `1: lo    inet 127.0.0.1/8 scope host lo\       valid_lft forever preferred_lft forever
52: eth0    inet 10.90.1.3/24 brd 10.90.1.255 scope global eth0\       valid_lft forever preferred_lft forever
54: eth1    inet 10.91.1.3/16 brd 10.91.255.255 scope global eth1\       valid_lft forever preferred_lft forever
garbage`
	if got := parseIPAddr(out); !reflect.DeepEqual(got, []string{"eth0", "eth1"}) {
		t.Fatalf("devices %v", got)
	}
}

func TestParseInspect(t *testing.T) {
	got := parseInspect([]string{
		"/zt-nancy-0|running|4242|zt-nancy,zt-wan,",
		"/zt-lyon-1|exited|0|zt-lyon,",
		"/zt-delayer|running|77|",
		"bad line",
	})
	want := map[string]containerState{
		"zt-nancy-0": {Status: "running", Pid: 4242, Networks: []string{"zt-nancy", "zt-wan"}},
		"zt-lyon-1":  {Status: "exited", Networks: []string{"zt-lyon"}},
		"zt-delayer": {Status: "running", Pid: 77},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v", got)
	}
}

func TestParseStats(t *testing.T) {
	tests := []struct {
		in   string
		want ContainerStats
	}{
		{"zt-a-0|0.52%|12.3MiB / 23.5GiB", ContainerStats{"zt-a-0", 0.52, 12897484}},
		{"zt-a-1|101.00%|1.5GiB / 2GiB", ContainerStats{"zt-a-1", 101, 1 << 30 * 3 / 2}},
		{"x|0.00%|512B / 1kB", ContainerStats{"x", 0, 512}},
		{"x|0.00%|2kB / 1MB", ContainerStats{"x", 0, 2000}},
	}
	for _, tt := range tests {
		got, err := parseStatsLine(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("%q: %+v, %v, want %+v", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"x|--|1MiB / 2MiB", "x|1%|12 parsecs / 1MiB", "x|1%", "x|1%|-3MiB / 1MiB"} {
		if _, err := parseStatsLine(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	f := Summarize([]ContainerStats{{"a", 1, 10 << 20}, {"b", 3, 30 << 20}, {"zt-delayer", 50, 1 << 30}}, "zt-delayer")
	if f.Agents != 2 || f.MeanMemory != 20<<20 || f.MaxMem != 30<<20 || f.MeanCPU != 2 || f.MaxCPU != 3 {
		t.Fatalf("footprint %+v", f)
	}
}

func TestNeighThresholds(t *testing.T) {
	tests := []struct{ n, cur2, cur3, want2, want3 int }{
		{12, 512, 1024, 656, 1312},           // the kernel's defaults are already short for 12
		{100, 512, 1024, 10512, 21024},       // a hundred containers
		{12, 100000, 200000, 100000, 200000}, // never lowered
		{50, 512, 100000, 3012, 100000},      // each raised on its own
	}
	for _, tt := range tests {
		if t2, t3 := neighThresholds(tt.n, tt.cur2, tt.cur3); t2 != tt.want2 || t3 != tt.want3 {
			t.Errorf("%d containers from %d/%d: %d/%d, want %d/%d", tt.n, tt.cur2, tt.cur3, t2, t3, tt.want2, tt.want3)
		}
	}
}
