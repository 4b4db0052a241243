package bench

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestColocatedRuns(t *testing.T) {
	for _, tc := range []struct {
		name           string
		path           []string
		found, missing []string
	}{
		{"none", nil, []string{"zorilla colocated"}, []string{"NetPIPE vader", "NetPIPE MPICH"}},
		{"Debian's names", []string{"mpirun.openmpi", "NPopenmpi", "mpirun.mpich", "NPmpich2"},
			[]string{"zorilla colocated", "NetPIPE vader", "NetPIPE MPICH"}, nil},
		{"NetPIPE without its mpirun", []string{"NPopenmpi", "mpirun.mpich", "NPmpich"},
			[]string{"zorilla colocated", "NetPIPE MPICH"}, []string{"NetPIPE vader"}},
	} {
		z := &zorillaTarget{prog: "pingpong"}
		runs, missing := colocatedRuns(z, t.TempDir(), on(tc.path...))
		var found, absent []string
		base := runs[0].series
		for _, r := range runs {
			found = append(found, r.target.name())
			if r.series == nil || r.series.base != base || r.series.name != r.target.name() {
				t.Errorf("%s: %s's series %+v does not divide the co-located zorilla's", tc.name, r.target.name(), r.series)
			}
		}
		for _, s := range missing {
			absent = append(absent, s.name)
			if !strings.HasPrefix(s.note, "not installed") || s.base != base {
				t.Errorf("%s: %s's note %q", tc.name, s.name, s.note)
			}
		}
		if !slices.Equal(found, tc.found) || !slices.Equal(absent, tc.missing) {
			t.Errorf("%s: found %v, missing %v; want %v, %v", tc.name, found, absent, tc.found, tc.missing)
		}
		if z.colocated || !runs[0].target.(*zorillaTarget).colocated {
			t.Errorf("%s: the co-located target is not a co-located copy", tc.name)
		}
	}
}

// TestWriteBenchTableColocated: the co-located rows divide the co-located
// zorilla figures, and the names widen the column.
func TestWriteBenchTableColocated(t *testing.T) {
	local := &series{name: "zorilla colocated", rounds: []map[int]figure{{8: {4, 2}}}}
	local.base = local
	res := &Results{Rounds: 1, series: []*series{
		{name: "zorilla", rounds: []map[int]figure{{8: {40, 0.2}}}},
		local,
		{name: "NetPIPE vader", base: local, rounds: []map[int]figure{{8: {2, 4}}}},
	}}
	var b strings.Builder
	WriteTable(&b, res, []int{8})
	want := `ping-pong on loopback: medians of 1 round; ratios: zorilla / the configuration, per round, median
    SIZE  CONFIG              LATENCY_US       MB/S  LAT_RATIO   BW_RATIO
     8 B  zorilla                  40.00       0.20          -          -
     8 B  zorilla colocated         4.00       2.00          -          -
     8 B  NetPIPE vader             2.00       4.00      2.00x      0.50x
`
	if got := b.String(); got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
}

// on is a lookPath that finds exactly the programs names, in /usr/bin.
func on(names ...string) func(string) (string, error) {
	return func(name string) (string, error) {
		if slices.Contains(names, name) {
			return "/usr/bin/" + name, nil
		}
		return "", errors.New("not found")
	}
}
