package sim

import (
	"encoding/csv"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/testnet"
)

// TestGrid5000MatchesReproduction runs the P2P-MPI experiment's jobs on
// the simulated Grid'5000 and compares each with the real reproduction
// (docs/grid5000/grid5000.csv): where the real run followed the paper's
// rules (no process misplaced against the ideal allocation), the
// simulation uses the same hosts and cores at every site; where the real
// run misplaced processes (its measured RTTs put a lyon host behind a
// rennes one), the simulation, whose RTTs are the topology's, gives the
// ideal allocation, or the real run's: its flood's extra radius can end
// a hop short of a lyon host, which then never offers.
func TestGrid5000MatchesReproduction(t *testing.T) {
	rows := readReproduction(t, "../../docs/grid5000/grid5000.csv")
	clusters := testnet.Grid5000Clusters()
	var ns []int
	for n := 100; n <= 600; n += 50 {
		ns = append(ns, n)
	}
	allocs, err := Grid5000(Grid5000Config(1), []job.Strategy{job.Concentrate, job.Spread}, ns)
	if err != nil {
		t.Fatal(err)
	}
	if len(allocs) != len(rows) {
		t.Fatalf("%d allocations, the reproduction has %d", len(allocs), len(rows))
	}
	for i, a := range allocs {
		real := rows[i]
		if a.Strategy != real.strategy || a.N != real.n {
			t.Fatalf("row %d: simulated %s n=%d, the reproduction's %s n=%d", i, a.Strategy, a.N, real.strategy, real.n)
		}
		wants := []map[string][2]int{real.sites}
		if real.misplaced > 0 {
			ideal, err := testnet.IdealAllocation(clusters, a.Strategy, a.N)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string][2]int{}
			for _, s := range ideal.Sites {
				want[s.Site] = [2]int{s.Hosts, s.Cores}
			}
			wants = []map[string][2]int{want, real.sites}
		}
		got := map[string][2]int{}
		for _, site := range testnet.Grid5000Sites() {
			if s := a.Site(site); s.Hosts > 0 {
				got[site] = [2]int{s.Hosts, s.Cores}
			}
		}
		if !slices.ContainsFunc(wants, func(w map[string][2]int) bool { return sameSites(got, w) }) {
			t.Errorf("%s n=%d: hosts / cores per site %v, want %v (reproduction misplaced %d; the first is the ideal allocation then)",
				a.Strategy, a.N, got, wants, real.misplaced)
		}
	}
}

// sameSites reports whether two allocations use as many hosts and cores
// at every site (a site absent from one uses none there).
func sameSites(a, b map[string][2]int) bool {
	for _, site := range testnet.Grid5000Sites() {
		if a[site] != b[site] {
			return false
		}
	}
	return true
}

type reproRow struct {
	strategy  job.Strategy
	n         int
	sites     map[string][2]int // hosts, cores
	misplaced int
}

func readReproduction(t *testing.T, path string) []reproRow {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	num := func(r []string, name string) int {
		v, err := strconv.Atoi(r[col[name]])
		if err != nil {
			t.Fatalf("%s: column %s: %v", path, name, err)
		}
		return v
	}
	var out []reproRow
	for _, r := range recs[1:] {
		row := reproRow{strategy: job.Strategy(r[col["strategy"]]), n: num(r, "n"), sites: map[string][2]int{},
			misplaced: num(r, "ideal_misplaced")}
		for _, s := range testnet.Grid5000Sites() {
			row.sites[s] = [2]int{num(r, s+"_hosts"), num(r, s+"_cores")}
		}
		out = append(out, row)
	}
	return out
}
