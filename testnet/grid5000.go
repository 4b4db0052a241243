package testnet

import (
	"fmt"
	"strings"
	"time"
)

// Cluster is one cluster of the P2P-MPI Grid'5000 experiment (Genaud and
// Rattanapoka, IPDPS 2008 workshops, Table 1): Hosts machines of Cores
// cores each, at a site RTT away from nancy, where jobs are submitted.
type Cluster struct {
	Site, Name string
	Hosts      int
	Cores      int           // cores per host: the agent's P
	RTT        time.Duration // to nancy, ICMP echo between frontal hosts (section 5)
}

// Grid5000Clusters are the eight clusters of Table 1, sorted by RTT to
// nancy: 350 hosts, 1040 cores on six sites. Per-host cores are the
// table's #Cores over #Nodes.
func Grid5000Clusters() []Cluster {
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	return []Cluster{
		{Site: "nancy", Name: "grelon", Hosts: 60, Cores: 4},
		{Site: "lyon", Name: "capricorn", Hosts: 50, Cores: 2, RTT: ms(10.5)},
		{Site: "rennes", Name: "paravent", Hosts: 90, Cores: 2, RTT: ms(11.6)},
		{Site: "bordeaux", Name: "bordereau", Hosts: 60, Cores: 4, RTT: ms(12.6)},
		{Site: "grenoble", Name: "idpot", Hosts: 8, Cores: 2, RTT: ms(13.2)},
		{Site: "grenoble", Name: "idcalc", Hosts: 12, Cores: 4, RTT: ms(13.2)},
		{Site: "sophia", Name: "azur", Hosts: 32, Cores: 2, RTT: ms(17.1)},
		{Site: "sophia", Name: "sol", Hosts: 38, Cores: 4, RTT: ms(17.1)},
	}
}

// Grid5000Sites are the experiment's six sites, nancy first, then by RTT
// to nancy: the order of the paper's figure legends.
func Grid5000Sites() []string {
	return []string{"nancy", "lyon", "rennes", "bordeaux", "grenoble", "sophia"}
}

// ScaleClusters divides every cluster's host count by div, rounding up so
// that no cluster disappears: div 1 is Table 1, div 10 a 37-host miniature
// with the same sites, RTTs and core counts that a unit test can afford.
func ScaleClusters(cs []Cluster, div int) []Cluster {
	out := append([]Cluster(nil), cs...)
	if div <= 1 {
		return out
	}
	for i := range out {
		out[i].Hosts = (out[i].Hosts + div - 1) / div
	}
	return out
}

// ClusterRTT is the RTT between hosts of clusters a and b. Inside a site
// it is 1 ms (two clusters of one site are 1 ms apart too); from nancy it
// is the paper's measure. The paper gives no RTT between two other sites:
// the rule here is the larger of their two RTTs to nancy. It keeps every
// site farther from any other site than from itself, never breaks the
// triangle inequality through nancy (max(a, b) <= a + b), and leaves
// nancy's ranking, the only one placement sees, exactly as measured.
func ClusterRTT(a, b Cluster) time.Duration {
	if a.Site == b.Site {
		return time.Millisecond
	}
	return max(a.RTT, b.RTT) // nancy's own RTT is 0: its row is the paper's

}

// clusterSiteName is a cluster's Site name in a Topology: "site/cluster",
// since a topology's site names must differ.
func clusterSiteName(c Cluster) string { return c.Site + "/" + c.Name }

// SiteOfName is the Grid'5000 site of a topology site name made by
// ClustersTopology ("grenoble/idcalc" -> "grenoble").
func SiteOfName(name string) string {
	site, _, _ := strings.Cut(name, "/")
	return site
}

// ClustersTopology turns clusters into a Topology: one Site per cluster,
// named "site/cluster", with the cluster's cores per agent, and a link
// between every two clusters (ClusterRTT). Agents are numbered cluster
// after cluster, so agent 0 is the first host of the first cluster.
func ClustersTopology(cs []Cluster) (Topology, error) {
	t := Topology{LocalRTT: time.Millisecond}
	for i, c := range cs {
		if c.Site == "" || c.Name == "" || strings.Contains(c.Site, "/") || c.Hosts < 1 || c.Cores < 1 || c.RTT < 0 {
			return Topology{}, fmt.Errorf("testnet: cluster %d (%s/%s): want a site and a name without '/', hosts >= 1, cores >= 1, RTT >= 0; got %d hosts of %d cores at %v",
				i, c.Site, c.Name, c.Hosts, c.Cores, c.RTT)
		}
		t.Sites = append(t.Sites, Site{Name: clusterSiteName(c), Hosts: c.Hosts, Cores: c.Cores})
		for _, d := range cs[:i] {
			t.Links = append(t.Links, SiteLink{A: clusterSiteName(d), B: clusterSiteName(c), RTT: ClusterRTT(d, c)})
		}
	}
	return t, t.validate()
}
