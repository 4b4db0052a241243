package testnet

import (
	"bytes"
	"encoding/csv"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/job"
)

func TestGrid5000Table1(t *testing.T) {
	hosts, cores := map[string]int{}, map[string]int{}
	total, totalCores := 0, 0
	for _, c := range Grid5000Clusters() {
		hosts[c.Site] += c.Hosts
		cores[c.Site] += c.Hosts * c.Cores
		total += c.Hosts
		totalCores += c.Hosts * c.Cores
	}
	// Table 1: #Nodes and #Cores per site.
	want := map[string][2]int{"nancy": {60, 240}, "lyon": {50, 100}, "rennes": {90, 180},
		"bordeaux": {60, 240}, "grenoble": {20, 64}, "sophia": {70, 216}}
	for site, w := range want {
		if hosts[site] != w[0] || cores[site] != w[1] {
			t.Errorf("%s: %d hosts %d cores, want %d and %d", site, hosts[site], cores[site], w[0], w[1])
		}
	}
	if total != 350 || totalCores != 1040 || len(hosts) != 6 {
		t.Errorf("%d hosts, %d cores, %d sites; want 350, 1040, 6", total, totalCores, len(hosts))
	}
}

func TestGrid5000ClusterRTT(t *testing.T) {
	cs := Grid5000Clusters()
	byName := map[string]Cluster{}
	for _, c := range cs {
		byName[c.Name] = c
	}
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	for _, tc := range []struct {
		a, b string
		want time.Duration
	}{
		{"grelon", "grelon", time.Millisecond}, // inside nancy
		{"grelon", "capricorn", ms(10.5)},      // nancy-lyon, the paper
		{"paravent", "grelon", ms(11.6)},       // rennes-nancy, either way round
		{"grelon", "sol", ms(17.1)},            // nancy-sophia
		{"idpot", "idcalc", time.Millisecond},  // two clusters of grenoble
		{"azur", "sol", time.Millisecond},      // two clusters of sophia
		{"capricorn", "paravent", ms(11.6)},    // lyon-rennes: the larger RTT to nancy
		{"bordereau", "idcalc", ms(13.2)},      // bordeaux-grenoble
		{"azur", "capricorn", ms(17.1)},        // sophia-lyon
		{"capricorn", "capricorn", time.Millisecond},
	} {
		if got := ClusterRTT(byName[tc.a], byName[tc.b]); got != tc.want {
			t.Errorf("RTT %s-%s = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestGrid5000Topology(t *testing.T) {
	topo, err := ClustersTopology(Grid5000Clusters())
	if err != nil {
		t.Fatal(err)
	}
	if topo.Size() != 350 || len(topo.Sites) != 8 || len(topo.Links) != 28 {
		t.Fatalf("size %d, %d sites, %d links; want 350, 8, 28", topo.Size(), len(topo.Sites), len(topo.Links))
	}
	if s := topo.Sites[5]; s.Name != "grenoble/idcalc" || s.Hosts != 12 || s.Cores != 4 || SiteOfName(s.Name) != "grenoble" {
		t.Fatalf("site 5 = %+v", s)
	}
	if topo.RTT(0, 0) != time.Millisecond || topo.RTT(0, 1) != 10500*time.Microsecond || topo.RTT(4, 5) != time.Millisecond {
		t.Fatalf("RTTs %v %v %v", topo.RTT(0, 0), topo.RTT(0, 1), topo.RTT(4, 5))
	}
	small := ScaleClusters(Grid5000Clusters(), 10)
	want := []int{6, 5, 9, 6, 1, 2, 4, 4} // rounded up: no cluster disappears
	for i, c := range small {
		if c.Hosts != want[i] {
			t.Errorf("scaled %s: %d hosts, want %d", c.Name, c.Hosts, want[i])
		}
	}
	if Grid5000Clusters()[0].Hosts != 60 {
		t.Fatal("ScaleClusters changed its input")
	}
	for _, bad := range []Cluster{{Site: "", Name: "x", Hosts: 1, Cores: 1}, {Site: "a/b", Name: "x", Hosts: 1, Cores: 1},
		{Site: "a", Name: "x", Hosts: 0, Cores: 1}, {Site: "a", Name: "x", Hosts: 1, Cores: 0}, {Site: "a", Name: "x", Hosts: 1, Cores: 1, RTT: -1}} {
		if _, err := ClustersTopology([]Cluster{bad}); err == nil {
			t.Errorf("cluster %+v accepted", bad)
		}
	}
	if _, err := ClustersTopology([]Cluster{{Site: "a", Name: "x", Hosts: 1, Cores: 1}, {Site: "a", Name: "x", Hosts: 1, Cores: 1}}); err == nil {
		t.Error("a repeated cluster accepted")
	}
}

// The ideal placement (true RTTs, every host offering) is the text of
// section 5.1 of the paper.
func TestGrid5000IdealIsThePaper(t *testing.T) {
	cs := Grid5000Clusters()
	ideal := func(s job.Strategy, n int) Allocation {
		a, err := IdealAllocation(cs, s, n)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	// concentrate: nancy only up to 200 (and 240, its capacity), then 5
	// hosts of lyon at 250.
	for n := 100; n <= 200; n += 50 {
		if a := ideal(job.Concentrate, n); a.Site("nancy").Cores != n || a.Site("nancy").Hosts != (n+3)/4 {
			t.Errorf("concentrate n=%d: nancy %+v", n, a.Site("nancy"))
		}
	}
	if a := ideal(job.Concentrate, 250); a.Site("nancy").Hosts != 60 || a.Site("lyon").Hosts != 5 || a.Site("lyon").Cores != 10 {
		t.Errorf("concentrate n=250: nancy %+v lyon %+v", a.Site("nancy"), a.Site("lyon"))
	}
	// spread: the four closest sites up to 250, all sites from 300.
	if a := ideal(job.Spread, 250); a.Site("grenoble").Hosts+a.Site("sophia").Hosts != 0 || a.Site("bordeaux").Hosts != 50 {
		t.Errorf("spread n=250: %+v", a.Sites)
	}
	for n := 300; n <= 600; n += 50 {
		a := ideal(job.Spread, n)
		for _, s := range a.Sites {
			if s.Hosts == 0 {
				t.Errorf("spread n=%d: no host at %s", n, s.Site)
			}
		}
	}
	// spread: one process per host up to 350, then the stair at nancy: at
	// 400 the 50 closest hosts, all at nancy, get a second process.
	if a := ideal(job.Spread, 350); a.Site("nancy").Cores != 60 || len(a.Hosts) != 350 {
		t.Errorf("spread n=350: nancy %+v, %d hosts", a.Site("nancy"), len(a.Hosts))
	}
	if a := ideal(job.Spread, 400); a.Site("nancy").Cores != 110 || a.Site("lyon").Cores != 50 {
		t.Errorf("spread n=400: nancy %+v lyon %+v", a.Site("nancy"), a.Site("lyon"))
	}
	for _, s := range []job.Strategy{job.Concentrate, job.Spread} {
		for n := 100; n <= 600; n += 50 {
			if err := CheckAllocation(ideal(s, n), cs, 0); err != nil {
				t.Errorf("ideal %s n=%d: %v", s, n, err)
			}
		}
	}
}

// tallyRecord is a dry run's record over three made-up peers.
func tallyRecord() (job.Record, func(peer.ID) (Placed, bool)) {
	at := map[peer.ID]Placed{
		"a": {Agent: 0, Site: "nancy", P: 4},
		"b": {Agent: 1, Site: "lyon", P: 2, RTT: 10 * time.Millisecond},
		"c": {Agent: 2, Site: "lyon", P: 2, RTT: 10 * time.Millisecond},
	}
	offers := []job.Offer{
		{Peer: "a", Lease: "l", Slots: 4, RTT: time.Millisecond},
		{Peer: "b", Lease: "l", Slots: 2, RTT: 11 * time.Millisecond},
		{Peer: "c", Lease: "l", Slots: 2, RTT: 14 * time.Millisecond},
	}
	plan, err := job.Place(job.Concentrate, offers, 6, 1)
	if err != nil {
		panic(err)
	}
	t0 := time.Date(2008, 4, 14, 9, 0, 0, 0, time.UTC)
	rec := job.Record{ID: "j", Plan: &plan, Offers: offers, History: []job.StateChange{
		{State: job.Waiting, At: t0}, {State: job.Reserving, At: t0.Add(time.Second)},
		{State: job.Done, At: t0.Add(1750 * time.Millisecond)}}}
	return rec, func(p peer.ID) (Placed, bool) { pl, ok := at[p]; return pl, ok }
}

func TestGrid5000Tally(t *testing.T) {
	rec, where := tallyRecord()
	a, err := Tally(rec, where)
	if err != nil {
		t.Fatal(err)
	}
	nancy, lyon := a.Site("nancy"), a.Site("lyon")
	if a.N != 6 || a.Strategy != job.Concentrate || a.Time != 750*time.Millisecond || a.Kept != 3 {
		t.Fatalf("allocation %+v", a)
	}
	if nancy.Hosts != 1 || nancy.Cores != 4 || lyon.Hosts != 1 || lyon.Cores != 2 || lyon.Offers != 2 ||
		lyon.MinRTT != 11*time.Millisecond || lyon.MaxRTT != 14*time.Millisecond || len(a.Sites) != 6 {
		t.Fatalf("sites %+v", a.Sites)
	}
	if len(a.Hosts) != 2 || a.Hosts[0].Procs != 4 || a.Hosts[1].Agent != 1 {
		t.Fatalf("hosts %+v", a.Hosts)
	}
	a.Reached = 3
	if a.Reservations() != 6 {
		t.Fatalf("reservations %d, want 3 offers + 3 cancels", a.Reservations())
	}
	if _, err := Tally(rec, func(peer.ID) (Placed, bool) { return Placed{}, false }); err == nil {
		t.Fatal("a peer outside the net was tallied")
	}
	rec.Plan = nil
	if _, err := Tally(rec, where); err == nil {
		t.Fatal("a record without a plan was tallied")
	}
}

func TestGrid5000Misplaced(t *testing.T) {
	a := Allocation{Sites: []SiteShare{{Site: "nancy", Cores: 240}, {Site: "lyon", Cores: 6}, {Site: "rennes", Cores: 4}}}
	b := Allocation{Sites: []SiteShare{{Site: "nancy", Cores: 240}, {Site: "lyon", Cores: 10}}}
	if m := Misplaced(a, b); m != 4 {
		t.Fatalf("misplaced %d, want 4", m)
	}
	if m := Misplaced(b, b); m != 0 {
		t.Fatalf("misplaced %d, want 0", m)
	}
}

func TestGrid5000CSVAndTable(t *testing.T) {
	rec, where := tallyRecord()
	a, err := Tally(rec, where)
	if err != nil {
		t.Fatal(err)
	}
	a.Adverts, a.Reached = 42, 3
	cs := []Cluster{{Site: "nancy", Name: "x", Hosts: 1, Cores: 4}, {Site: "lyon", Name: "y", Hosts: 2, Cores: 2, RTT: 10 * time.Millisecond}}
	var buf bytes.Buffer
	if err := WriteCSV(&buf, cs, []Allocation{a}); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"strategy", "n", "nancy_hosts", "nancy_cores", "lyon_hosts", "lyon_cores", "alloc_ms", "advert_msgs", "offers", "lease_requests", "reservation_msgs", "ideal_misplaced"},
		{"concentrate", "6", "1", "4", "1", "2", "750", "42", "3", "3", "6", "0"},
	}
	if fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Fatalf("csv\n got %v\nwant %v", rows, want)
	}
	buf.Reset()
	if err := WriteTable(&buf, cs, []Allocation{a}); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(buf.String()), "\n"); len(lines) != 2 ||
		!strings.Contains(lines[1], "concentrate") || !strings.Contains(lines[1], "1/4") || !strings.Contains(lines[1], "750ms") {
		t.Fatalf("table:\n%s", buf.String())
	}
}

func TestGrid5000SVG(t *testing.T) {
	cs := Grid5000Clusters()
	var allocs []Allocation
	for _, n := range []int{100, 250, 400} {
		for _, s := range []job.Strategy{job.Concentrate, job.Spread} {
			a, err := IdealAllocation(cs, s, n)
			if err != nil {
				t.Fatal(err)
			}
			allocs = append(allocs, a)
		}
	}
	var buf bytes.Buffer
	if err := WriteSVG(&buf, cs, job.Spread, allocs); err != nil {
		t.Fatal(err)
	}
	// Well-formed XML; one rect per non-empty (n, site) in each panel,
	// plus the background and the six legend keys.
	dec := xml.NewDecoder(bytes.NewReader(buf.Bytes()))
	rects := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("svg is not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "rect" {
			rects++
		}
	}
	segments := 0
	for _, a := range allocs {
		if a.Strategy != job.Spread {
			continue
		}
		for _, s := range a.Sites {
			if s.Hosts > 0 {
				segments += 2 // hosts panel and cores panel
			}
		}
	}
	if want := 1 + 6 + segments; rects != want {
		t.Fatalf("%d rects, want %d", rects, want)
	}
	if !strings.Contains(buf.String(), "lyon (10.5 ms) 50 hosts, 100 cores") {
		t.Fatal("legend lacks lyon's RTT and capacity")
	}
	if err := WriteSVG(&buf, cs, job.Concentrate, nil); err == nil {
		t.Fatal("a figure of nothing was drawn")
	}
}

func TestGrid5000NiceStep(t *testing.T) {
	for raw, want := range map[float64]float64{0.3: 1, 1: 1, 1.5: 2, 3: 5, 7: 10, 12: 20, 48: 50, 70: 100, 120: 200} {
		if got := niceStep(raw); got != want {
			t.Errorf("niceStep(%v) = %v, want %v", raw, got, want)
		}
	}
}

// CheckAllocation catches each broken rule; the ideal placements pass it
// (TestGrid5000IdealIsThePaper).
func TestGrid5000CheckAllocation(t *testing.T) {
	cs := Grid5000Clusters()
	ideal := func(s job.Strategy, n int) Allocation {
		a, err := IdealAllocation(cs, s, n)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	// moveTo moves the last host's processes to a host of the named site
	// (its P and RTT), as if a farther offer had ranked first.
	moveTo := func(a Allocation, from, to string, p int, rtt time.Duration) Allocation {
		b := a
		b.Hosts = append([]HostShare(nil), a.Hosts...)
		b.Sites = append([]SiteShare(nil), a.Sites...)
		for i := range b.Hosts {
			if b.Hosts[i].Site == from {
				moved := b.Hosts[i].Procs
				b.Hosts[i].Site, b.Hosts[i].P, b.Hosts[i].RTT = to, p, rtt
				for j := range b.Sites {
					switch b.Sites[j].Site {
					case from:
						b.Sites[j].Hosts--
						b.Sites[j].Cores -= moved
					case to:
						b.Sites[j].Hosts++
						b.Sites[j].Cores += moved
					}
				}
				return b
			}
		}
		t.Fatalf("no host at %s", from)
		return a
	}
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	over := ideal(job.Concentrate, 100)
	over.Hosts = append([]HostShare(nil), over.Hosts...)
	over.Hosts[0].Procs, over.Hosts[1].Procs = 5, 3
	for name, tc := range map[string]struct {
		a    Allocation
		tol  time.Duration
		want string
	}{
		"P exceeded":               {over, 0, "its P is 4"},
		"concentrate leaves nancy": {moveTo(ideal(job.Concentrate, 100), "nancy", "lyon", 4, ms(10.5)), 0, "processes at nancy, want 100"},
		"farther site first":       {moveTo(ideal(job.Concentrate, 300), "lyon", "bordeaux", 2, ms(12.6)), 0, "hosts used at bordeaux"},
		"within tolerance":         {moveTo(ideal(job.Concentrate, 300), "lyon", "bordeaux", 2, ms(12.6)), 3 * time.Millisecond, ""},
		"spread skips nancy":       {moveTo(ideal(job.Spread, 100), "nancy", "rennes", 2, ms(11.6)), 0, "hosts at nancy, want 60"},
		"spread second far":        {moveTo(ideal(job.Spread, 400), "nancy", "sophia", 4, ms(17.1)), 0, "only 1 of"},
		"spread doubles early":     {doubleUp(ideal(job.Spread, 300)), 0, "while 51 of 350 offered hosts hold none"},
	} {
		err := CheckAllocation(tc.a, cs, tc.tol)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: got %v, want an error with %q", name, err, tc.want)
		}
	}
}

// doubleUp gives the first host a second process taken from the last one.
func doubleUp(a Allocation) Allocation {
	b := a
	b.Hosts = append([]HostShare(nil), a.Hosts[:len(a.Hosts)-1]...)
	b.Hosts[0].Procs++
	return b
}

func TestGrid5000RTTClasses(t *testing.T) {
	cs := Grid5000Clusters()
	for tol, want := range map[time.Duration]string{
		0:                       "[[nancy] [lyon] [rennes] [bordeaux] [grenoble] [sophia]]",
		3 * time.Millisecond:    "[[nancy] [lyon rennes bordeaux grenoble] [sophia]]",
		10 * time.Millisecond:   "[[nancy] [lyon rennes bordeaux grenoble sophia]]",
		1100 * time.Microsecond: "[[nancy] [lyon rennes bordeaux grenoble] [sophia]]",
	} {
		if got := fmt.Sprint(RTTClasses(cs, tol)); got != want {
			t.Errorf("tol %v: %s, want %s", tol, got, want)
		}
	}
	a, err := IdealAllocation(cs, job.Spread, 400)
	if err != nil {
		t.Fatal(err)
	}
	got := a.ByClass(RTTClasses(cs, 3*time.Millisecond))
	want := []SiteShare{{Site: "nancy", Hosts: 60, Cores: 110, Offers: 60}, {Site: "lyon+rennes+bordeaux+grenoble", Hosts: 220, Cores: 220, Offers: 220},
		{Site: "sophia", Hosts: 70, Cores: 70, Offers: 70}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("by class\n got %+v\nwant %+v", got, want)
	}
}

func TestGrid5000CheckMeasured(t *testing.T) {
	rec, where := tallyRecord()
	a, err := Tally(rec, where)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Offers) != 3 || a.Offers[0].Procs != 4 || a.Offers[1].Procs != 2 || a.Offers[2].Procs != 0 || a.Offers[2].Measured != 14*time.Millisecond {
		t.Fatalf("offers %+v", a.Offers)
	}
	if err := CheckMeasured(a, 0); err != nil {
		t.Fatal(err)
	}
	swapped := a
	swapped.Offers = append([]OfferShare(nil), a.Offers...)
	swapped.Offers[1].Measured, swapped.Offers[2].Measured = 14*time.Millisecond, 11*time.Millisecond
	if err := CheckMeasured(swapped, 0); err == nil || !strings.Contains(err.Error(), "measured at 14ms, while agent 2") {
		t.Fatalf("a farther host used: %v", err)
	}
	fast := a
	fast.Offers = append([]OfferShare(nil), a.Offers...)
	fast.Offers[1].Measured = 9500 * time.Microsecond // its link is 10 ms
	if err := CheckMeasured(fast, time.Millisecond); err != nil {
		t.Fatalf("within slack: %v", err)
	}
	if err := CheckMeasured(fast, 0); err == nil || !strings.Contains(err.Error(), "below its link's RTT") {
		t.Fatalf("a ping faster than its link: %v", err)
	}
}
