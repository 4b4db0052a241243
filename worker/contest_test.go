package worker

import (
	"slices"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/job/proto"
)

// The yield rule, on the out-of-core example of time sharing: heat jobs of 4 ranks,
// one rank per host, each declaring U a rank, on hosts lending 2.5 U (two
// jobs fit, three do not), J = 3, 3 cores, P = 1; j0, j1, j2 submitted in
// that order. And a host of J = 1.
func TestContested(t *testing.T) {
	const U = int64(311) << 20
	mem := Policy{MaxJobs: 3, MaxProcs: 1, Cores: 3, Memory: 5 * U / 2, OS: "linux", Arch: "amd64", MaxPriority: 10}
	one := Policy{MaxJobs: 1, MaxProcs: 4, Cores: 4, Memory: 8 * U, OS: "linux", Arch: "amd64"}
	wide := Policy{MaxJobs: 3, MaxProcs: 2, Cores: 2, Memory: 8 * U, OS: "linux", Arch: "amd64"}
	since := func(j proto.JobID, sec int) Seniority {
		return Seniority{Since: t0.Add(time.Duration(sec) * time.Second), Job: j}
	}
	line := map[proto.JobID]Seniority{"j0": since("j0", 0), "j1": since("j1", 1), "j2": since("j2", 2), "j3": since("j3", 3)}
	prio := func(j proto.JobID) (Seniority, bool) { p, ok := line[j]; return p, ok }
	lease := func(j proto.JobID, prio int, mem int64, committed bool) Lease {
		return Lease{Key: "k-" + string(j), Job: j, Slots: 1, Cores: 1, Memory: mem, Committed: committed, Priority: prio}
	}
	who := func(j proto.JobID, prio int) Contender {
		return Contender{Submitter: "alice", Need: proto.Need{Job: j, N: 4, R: 1, MemPerProc: U, Priority: prio}, Since: line[j], Honoured: prio}
	}
	cases := []struct {
		name   string
		p      Policy
		leases []Lease
		c      Contender
		want   []string
	}{
		{"the out-of-core split: j0 runs, j2 holds the rest, j1 refused: j2 gives it back",
			mem, []Lease{lease("j0", 0, U, true), lease("j2", 0, U, false)}, who("j1", 0), []string{"k-j2"}},
		{"the later job refused asks nothing of the earlier",
			mem, []Lease{lease("j0", 0, U, true), lease("j1", 0, U, false)}, who("j2", 0), nil},
		{"two later holders, one release lets it in: only the latest gives way",
			mem, []Lease{lease("j1", 0, U, false), lease("j2", 0, U, false)}, who("j0", 0), []string{"k-j2"}},
		{"running jobs hold the room: nobody is asked (that is the swap's business)",
			mem, []Lease{lease("j0", 0, U, true), lease("j1", 0, U, true)}, who("j2", 0), nil},
		{"a release that does not let it in is not asked",
			mem, []Lease{lease("j0", 0, 2*U, true), lease("j2", 0, U/4, false)}, who("j1", 0), nil},
		{"it fits already: nobody is asked",
			mem, []Lease{lease("j2", 0, U, false)}, who("j1", 0), nil},
		{"a job never contests its own lease",
			mem, []Lease{lease("j1", 0, U, false), lease("j2", 0, U, false)}, who("j1", 0), []string{"k-j2"}},
		{"a holder of equal priority not in the line is left alone",
			mem, []Lease{lease("j0", 0, U, true), lease("stranger", 0, U, false)}, who("j1", 0), nil},
		{"a holder of lower priority is asked, in the line or not",
			mem, []Lease{lease("j0", 0, U, true), lease("stranger", 0, U, false)}, who("j3", 5), []string{"k-stranger"}},
		{"a later job of higher priority contests an earlier one",
			mem, []Lease{lease("j0", 0, U, true), lease("j1", 0, U, false)}, who("j2", 5), []string{"k-j1"}},
		{"an earlier job of lower priority does not contest a later higher one",
			mem, []Lease{lease("j0", 0, U, true), lease("j2", 5, U, false)}, who("j1", 0), nil},
		{"the lowest priority gives way first, before a later one",
			mem, []Lease{lease("j1", 0, U, false), lease("j2", 3, U, false)}, who("j3", 5), []string{"k-j1"}},
		{"J = 1 held by a later job",
			one, []Lease{lease("j2", 0, 0, false)}, who("j1", 0), []string{"k-j2"}},
		{"committed leases (running jobs) are never contested",
			one, []Lease{lease("j2", 0, 0, true)}, who("j1", 0), nil},
		{"an earlier job's offers to grow go to a later job waiting to start",
			one, []Lease{func() Lease { l := lease("j0", 0, 0, false); l.Need.Grow = true; return l }()}, who("j1", 0), []string{"k-j0"}},
		{"but not to a later job that grows too",
			one, []Lease{func() Lease { l := lease("j0", 0, 0, false); l.Need.Grow = true; return l }()},
			func() Contender { c := who("j1", 0); c.Need.Grow = true; return c }(), nil},
		{"as many as give it all the processes it could have: both cores",
			wide, []Lease{lease("j1", 0, 0, false), lease("j2", 0, 0, false)}, who("j0", 0), []string{"k-j2", "k-j1"}},
	}
	for _, c := range cases {
		u := Usage{}
		for _, l := range c.leases {
			u.Jobs, u.Cores, u.Memory = u.Jobs+1, u.Cores+l.Cores, u.Memory+l.Memory
		}
		var got []string
		for _, l := range Contested(c.p, u, c.leases, c.c, prio) {
			got = append(got, l.Key)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
