package docker

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"path/filepath"
	"strconv"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// Labels on everything a testnet makes, so that down finds it all.
const (
	LabelTestnet = "zorilla.testnet" // the testnet's name
	LabelSite    = "zorilla.site"    // an agent container's site
	LabelRole    = "zorilla.role"    // agent, delayer, site or wan
)

const (
	agentPort        = 4001
	webPort          = 4080 // the agent's web view, on every container address
	containerDataDir = "/data"
	// queueBase numbers the NFQUEUE queues: traffic to site s goes through
	// queue queueBase+s of the sending container's namespace.
	queueBase = 100
)

// AddrPlan is where a testnet's addresses come from: site s's bridge is
// the s-th /24 of Sites, and its containers' addresses on the shared wan
// network are the s-th /24 of WAN, so the site of any address is known
// from its third byte. Container j of a site is host j+2 (.1 is the
// bridge's gateway).
type AddrPlan struct {
	Sites netip.Prefix `json:"sites"` // a /16
	WAN   netip.Prefix `json:"wan"`   // a /16
}

// addrPlanAt is the plan on 10.b.0.0/16 (sites) and 10.b+1.0.0/16 (wan).
func addrPlanAt(b byte) AddrPlan {
	return AddrPlan{
		Sites: netip.PrefixFrom(netip.AddrFrom4([4]byte{10, b, 0, 0}), 16),
		WAN:   netip.PrefixFrom(netip.AddrFrom4([4]byte{10, b + 1, 0, 0}), 16),
	}
}

// SiteSubnet is the bridge subnet of site s.
func (a AddrPlan) SiteSubnet(s int) netip.Prefix { return sub24(a.Sites, s) }

// WANSubnet is the part of the wan that holds site s's containers.
func (a AddrPlan) WANSubnet(s int) netip.Prefix { return sub24(a.WAN, s) }

func sub24(p netip.Prefix, s int) netip.Prefix {
	b := p.Addr().As4()
	b[2] = byte(s)
	b[3] = 0
	return netip.PrefixFrom(netip.AddrFrom4(b), 24)
}

// hostAddr is the address of container j in a /24.
func hostAddr(p netip.Prefix, j int) netip.Addr {
	b := p.Addr().As4()
	b[3] = byte(j + 2)
	return netip.AddrFrom4(b)
}

// gateway is the first address of a prefix: the bridge's own.
func gateway(p netip.Prefix) netip.Addr { return p.Addr().Next() }

// Container is the plan of one agent container.
type Container struct {
	Name      string     `json:"name"`      // docker name: <testnet>-<site>-<index>
	Site      int        `json:"site"`      // index in the layout
	SiteName  string     `json:"site_name"` // the site's name
	Index     int        `json:"index"`     // within its site
	Cores     int        `json:"cores"`
	SiteIP    netip.Addr `json:"site_ip"` // on the site bridge
	WANIP     netip.Addr `json:"wan_ip"`  // on the shared wan network
	PeerID    peer.ID    `json:"peer_id"`
	Bootstrap string     `json:"bootstrap,omitempty"` // one earlier agent's address; "" for the first
	JoinsVia  int        `json:"joins_via"`           // index of that agent's container; -1 for the first
	DataDir   string     `json:"data_dir"`            // on the host, mounted at /data
}

// Short is the container's name without the testnet prefix: site-index.
func (c Container) Short() string { return c.SiteName + "-" + strconv.Itoa(c.Index) }

// Addr is the agent's address on the wan, which every site can reach.
func (c Container) Addr() string {
	return fmt.Sprintf("/ip4/%s/tcp/%d/p2p/%s", c.WANIP, agentPort, c.PeerID)
}

// planContainers lays out the containers site by site. Each one but the
// first bootstraps from one earlier container, drawn with rng: nobody is
// special, and the joins form a random tree.
func planContainers(name, dir string, l Layout, a AddrPlan, ids []peer.ID, rng *rand.Rand) []Container {
	var out []Container
	for s, site := range l.Sites {
		for j := range site.Hosts {
			c := Container{
				Name: name + "-" + site.Name + "-" + strconv.Itoa(j), Site: s, SiteName: site.Name,
				Index: j, Cores: site.Cores,
				SiteIP: hostAddr(a.SiteSubnet(s), j), WANIP: hostAddr(a.WANSubnet(s), j),
				PeerID: ids[len(out)], DataDir: filepath.Join(dir, site.Name+"-"+strconv.Itoa(j)),
				JoinsVia: -1,
			}
			if len(out) > 0 {
				c.JoinsVia = rng.IntN(len(out))
				c.Bootstrap = out[c.JoinsVia].Addr()
			}
			out = append(out, c)
		}
	}
	return out
}

// AgentArgs is the agent's command line in the container: the owner's
// settings of its site (P = cores), open to any submitter (a testnet),
// labelled with its site so that jobs can require one, with its web view
// on the container's addresses (WebURL). It listens on TCP, and on QUIC
// too when quic is set.
func (c Container) AgentArgs(quic bool, extra []string) []string {
	cores := strconv.Itoa(c.Cores)
	args := []string{"agent", "--data-dir", containerDataDir, "--listen", fmt.Sprintf("/ip4/0.0.0.0/tcp/%d", agentPort)}
	if quic {
		args = append(args, "--listen", fmt.Sprintf("/ip4/0.0.0.0/udp/%d/quic-v1", agentPort))
	}
	args = append(args, "--cores", cores, "--max-procs", cores, "--open", "--label", "site="+c.SiteName,
		"--web", fmt.Sprintf("0.0.0.0:%d", webPort))
	if c.Bootstrap != "" {
		args = append(args, "--bootstrap", c.Bootstrap)
	}
	return append(args, extra...)
}

// Rule delays the traffic a container sends to one site.
type Rule struct {
	Site  string         // the destination site
	Dst   []netip.Prefix // its addresses
	Queue uint16         // the NFQUEUE queue (nfqueue shaper)
	Delay time.Duration  // one way: half the RTT
}

// delayRules are the rules of a container of site s: to each site t,
// half the RTT between s and t, on the way out; the other container
// delays the way back.
func delayRules(l Layout, a AddrPlan, s int, local time.Duration) []Rule {
	var out []Rule
	for t, site := range l.Sites {
		d := l.RTT(s, t, local) / 2
		if d <= 0 {
			continue
		}
		out = append(out, Rule{Site: site.Name, Dst: []netip.Prefix{a.SiteSubnet(t), a.WANSubnet(t)},
			Queue: uint16(queueBase + t), Delay: d})
	}
	return out
}

// QueueDelay is the delay one NFQUEUE queue applies: traffic to one site.
type QueueDelay struct {
	Num   uint16        `json:"num"`
	Delay time.Duration `json:"delay"` // one way; half the RTT
}

// queueDelays are the queues of rules, for the delay line.
func queueDelays(rules []Rule) []QueueDelay {
	out := make([]QueueDelay, 0, len(rules))
	for _, r := range rules {
		out = append(out, QueueDelay{Num: r.Queue, Delay: r.Delay})
	}
	return out
}

// iptablesCommands send the traffic of each rule to its queue.
// --queue-bypass lets packets through undelayed while no delay line is
// bound, so a stopped delayer never cuts the network.
func iptablesCommands(rules []Rule) [][]string {
	var out [][]string
	for _, r := range rules {
		for _, p := range r.Dst {
			out = append(out, []string{"iptables", "-w", "5", "-A", "OUTPUT", "-d", p.String(),
				"-j", "NFQUEUE", "--queue-num", strconv.Itoa(int(r.Queue)), "--queue-bypass"})
		}
	}
	return out
}

// loopbackExempt keeps a container's traffic to itself undelayed: it goes
// out on lo even when addressed to the container's own site address.
var loopbackExempt = []string{"iptables", "-w", "5", "-A", "OUTPUT", "-o", "lo", "-j", "ACCEPT"}

// netemCommands shape dev with netem: an htb root whose class i (minor
// 0x10+i) holds a netem qdisc with rule i's delay, and u32 filters that
// send each rule's destinations to its class. Other traffic is not
// delayed (htb's default class 0: unclassified packets go straight out).
func netemCommands(dev string, rules []Rule) [][]string {
	out := [][]string{{"tc", "qdisc", "replace", "dev", dev, "root", "handle", "1:", "htb", "default", "0"}}
	for i, r := range rules {
		minor := fmt.Sprintf("%x", 0x10+i)
		us := fmt.Sprintf("%dus", r.Delay.Microseconds())
		out = append(out,
			[]string{"tc", "class", "add", "dev", dev, "parent", "1:", "classid", "1:" + minor, "htb", "rate", "10gbit"},
			[]string{"tc", "qdisc", "add", "dev", dev, "parent", "1:" + minor, "handle", minor + ":", "netem", "delay", us, "limit", "10000"})
		for _, p := range r.Dst {
			out = append(out, []string{"tc", "filter", "add", "dev", dev, "parent", "1:", "protocol", "ip", "prio", "1",
				"u32", "match", "ip", "dst", p.String(), "flowid", "1:" + minor})
		}
	}
	return out
}

// WebURL is the agent's web view, reached from the host on its site
// address.
func (c Container) WebURL() string { return fmt.Sprintf("http://%s:%d/", c.SiteIP, webPort) }
