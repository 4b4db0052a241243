package testnet

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"
)

// Available sums clusters by site, in Grid5000Sites order: hosts and cores
// each site offers. Sites not in Grid5000Sites come after, in the order
// they first appear.
func Available(clusters []Cluster) []SiteShare {
	var out []SiteShare
	at := map[string]int{}
	add := func(site string) {
		if _, ok := at[site]; !ok {
			at[site] = len(out)
			out = append(out, SiteShare{Site: site})
		}
	}
	for _, s := range Grid5000Sites() {
		add(s)
	}
	for _, c := range clusters {
		add(c.Site)
		s := &out[at[c.Site]]
		s.Hosts += c.Hosts
		s.Cores += c.Hosts * c.Cores
		s.MinRTT, s.MaxRTT = c.RTT, c.RTT
	}
	return out
}

// csvHeader names the columns of WriteCSV: per site hosts and cores, then
// the cost of the job.
func csvHeader(sites []string) []string {
	h := []string{"strategy", "n"}
	for _, s := range sites {
		h = append(h, s+"_hosts", s+"_cores")
	}
	return append(h, "alloc_ms", "advert_msgs", "offers", "lease_requests", "reservation_msgs", "ideal_misplaced")
}

// row is one allocation as the strings of a table row; misplaced is the
// difference to the ideal placement (Misplaced), -1 if unknown.
func row(a Allocation, sites []string, misplaced int) []string {
	r := []string{string(a.Strategy), strconv.Itoa(a.N)}
	for _, s := range sites {
		sh := a.Site(s)
		r = append(r, strconv.Itoa(sh.Hosts), strconv.Itoa(sh.Cores))
	}
	return append(r, strconv.FormatInt(a.Time.Milliseconds(), 10), strconv.FormatUint(a.Adverts, 10),
		strconv.Itoa(a.Reached), strconv.Itoa(a.Kept), strconv.Itoa(a.Reservations()), strconv.Itoa(misplaced))
}

// siteNames lists the sites of clusters in Grid5000Sites order.
func siteNames(clusters []Cluster) []string {
	var out []string
	for _, s := range Available(clusters) {
		if s.Hosts > 0 {
			out = append(out, s.Site)
		}
	}
	return out
}

// WriteCSV writes one row per allocation: hosts and cores per site, the
// allocation time, the advert and reservation messages, and how many
// processes sit elsewhere than in the ideal placement over clusters.
func WriteCSV(w io.Writer, clusters []Cluster, allocs []Allocation) error {
	sites := siteNames(clusters)
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader(sites)); err != nil {
		return fmt.Errorf("grid5000 csv: %w", err)
	}
	for _, a := range allocs {
		if err := cw.Write(row(a, sites, misplacedOf(clusters, a))); err != nil {
			return fmt.Errorf("grid5000 csv: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("grid5000 csv: %w", err)
	}
	return nil
}

func misplacedOf(clusters []Cluster, a Allocation) int {
	ideal, err := IdealAllocation(clusters, a.Strategy, a.N)
	if err != nil {
		return -1
	}
	return Misplaced(a, ideal)
}

// WriteTable writes the allocations as an aligned text table, each site's
// column as hosts/cores, for a terminal.
func WriteTable(w io.Writer, clusters []Cluster, allocs []Allocation) error {
	sites := siteNames(clusters)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "strategy\tn\t")
	for _, s := range sites {
		fmt.Fprintf(tw, "%s\t", s)
	}
	fmt.Fprint(tw, "time\tadverts\treserv.\tmisplaced\t\n")
	for _, a := range allocs {
		fmt.Fprintf(tw, "%s\t%d\t", a.Strategy, a.N)
		for _, s := range sites {
			sh := a.Site(s)
			fmt.Fprintf(tw, "%d/%d\t", sh.Hosts, sh.Cores)
		}
		fmt.Fprintf(tw, "%v\t%d\t%d\t%d\t\n", a.Time.Round(time.Millisecond), a.Adverts, a.Reservations(), misplacedOf(clusters, a))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("grid5000 table: %w", err)
	}
	return nil
}
