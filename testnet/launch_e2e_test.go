package testnet

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/node"
)

// The launch end to end, on 16 agents on loopback running real
// processes. The subtests share one network; those that stop agents come
// last.
func TestLaunch16(t *testing.T) {
	if testing.Short() {
		t.Skip("16 agents and real processes")
	}
	ln := startLaunchNet(t, 16, 4, func(i int, cfg *node.Config) {
		switch i {
		case silentVictim:
			cfg.Cores, cfg.MaxProcs = 8, 8
		case patientSubmitter:
			cfg.Services.Submitter.OfferGrace = time.Second
		}
	})
	t.Run("placement", func(t *testing.T) { testPlacement(t, ln) })
	t.Run("failing-rank", func(t *testing.T) { testFailingRank(t, ln) })
	t.Run("cancel", func(t *testing.T) { testCancel(t, ln) })
	t.Run("timeout", func(t *testing.T) { testTimeout(t, ln) })
	t.Run("bad-program", func(t *testing.T) { testBadProgram(t, ln) })
	t.Run("hash-mismatch", func(t *testing.T) { testHashMismatch(t, ln) })                  // breaks agent 1 as a submitter
	t.Run("submitter-restart", func(t *testing.T) { testSubmitterRestart(t, ln) })          // restarts agent 0
	t.Run("restart-before-release", func(t *testing.T) { testRestartBeforeRelease(t, ln) }) // restarts agent 0
	t.Run("silent-host", func(t *testing.T) { testSilentHost(t, ln) })                      // stops an agent
	t.Run("host-lost-restart", func(t *testing.T) { testHostLostRestart(t, ln) })           // stops an agent
	t.Run("host-lost-no-retries", func(t *testing.T) { testHostLostNoRetries(t, ln) })      // stops an agent
}

// atLine is what the placement script prints: rank, replica and agent.
var atLine = regexp.MustCompile(`^at (\d+) (\d+) (\S+)$`)

// testPlacement runs 32 processes with each strategy, once per rank
// (r = 1) and twice (r = 2: 64 processes), and checks the plan against the
// strategy and every process against the plan.
func testPlacement(t *testing.T, ln *launchNet) {
	prog := uploadScript(t, ln.Nodes[0], `echo "at $ZORILLA_RANK $ZORILLA_REPLICA $ZORILLA_AGENT"`)
	cases := []struct {
		s    job.Strategy
		n, r int
	}{
		{job.Concentrate, 32, 1}, {job.Spread, 32, 1},
		{job.Concentrate, 32, 2}, {job.Spread, 32, 2},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/n=%d/r=%d", c.s, c.n, c.r), func(t *testing.T) {
			d := job.NewDescription("prog.sh", nil, c.n)
			d.Strategy, d.Replicas = c.s, c.r
			w := submitJob(t, ln.Nodes[0], d, prog)
			rec := w.wait(t)
			if rec.State != job.Done || rec.Exit != 0 {
				t.Fatalf("job ended %s (exit %d): %s", rec.State, rec.Exit, rec.Reason)
			}
			checkPlan(t, rec)
			checkProcesses(t, rec, w.updates())
			checkJobFolderOutput(t, ln, rec)
		})
	}
}

// checkPlan checks the record's plan: n×r processes, no two copies of a
// rank on one host, hosts taken in rlist order, and the strategy's shape.
func checkPlan(t *testing.T, rec job.Record) {
	t.Helper()
	p := rec.Plan
	d := rec.Desc
	if p == nil || p.N != d.Nodes || p.R != d.Replicas || p.Strategy != d.Strategy {
		t.Fatalf("plan %+v does not match the description", p)
	}
	if err := p.RankTable().Check(d.Nodes, d.Replicas); err != nil {
		t.Fatal(err)
	}
	total := 0
	var u, c []int
	for i, h := range p.Hosts {
		if i >= len(rec.Offers) || rec.Offers[i].Peer != h.Offer.Peer {
			t.Fatalf("host %d of the plan is not the %d-th offer of rlist", i, i)
		}
		u = append(u, len(h.Procs))
		c = append(c, job.Capacity(h.Offer, d.Nodes))
		total += len(h.Procs)
	}
	if total != d.Nodes*d.Replicas {
		t.Fatalf("plan holds %d processes, want %d", total, d.Nodes*d.Replicas)
	}
	switch d.Strategy {
	case job.Concentrate: // fill each host to c_i in order
		for i := range len(u) - 1 {
			if u[i] != c[i] {
				t.Fatalf("concentrate: host %d holds %d of its %d slots before the next is used (u=%v)", i, u[i], c[i], u)
			}
		}
	case job.Spread: // round-robin: no host holds two more than another with room
		for i := range u {
			for j := range u {
				if u[i] < c[i] && u[j] > u[i]+1 {
					t.Fatalf("spread: host %d holds %d while host %d holds %d (u=%v)", j, u[j], i, u[i], u)
				}
			}
		}
		if want := min(len(rec.Offers), d.Nodes*d.Replicas); len(p.Hosts) != want && slotsLeft(u, c) {
			t.Fatalf("spread uses %d hosts, want %d", len(p.Hosts), want)
		}
	}
	t.Logf("%s n=%d r=%d: u=%v over %d offers", d.Strategy, d.Nodes, d.Replicas, u, len(rec.Offers))
}

func slotsLeft(u, c []int) bool {
	for i := range u {
		if u[i] < c[i] {
			return true
		}
	}
	return false
}

// checkProcesses checks that every copy of every rank ran exactly once, on
// the host the plan gave it, and that its output came back tagged with its
// rank and replica.
func checkProcesses(t *testing.T, rec job.Record, ups []job.Update) {
	t.Helper()
	table := rec.Plan.RankTable().Peers()
	seen := map[[2]int]bool{}
	for _, l := range linesMatching(ups, atLine) {
		rank, _ := strconv.Atoi(l.sub[0])
		rep, _ := strconv.Atoi(l.sub[1])
		if l.u.Rank != rank || l.u.Replica != rep {
			t.Fatalf("line %q tagged rank %d replica %d", l.u.Line, l.u.Rank, l.u.Replica)
		}
		if rank >= len(table) || rep >= len(table[rank]) {
			t.Fatalf("line %q: no such process in the plan", l.u.Line)
		}
		if seen[[2]int{rank, rep}] {
			t.Fatalf("rank %d replica %d ran twice", rank, rep)
		}
		seen[[2]int{rank, rep}] = true
		if want := table[rank][rep]; peer.ID(l.sub[2]) != want && l.sub[2] != want.String() {
			t.Fatalf("rank %d replica %d ran on %s, the plan put it on %s", rank, rep, l.sub[2], want)
		}
	}
	if want := rec.Desc.Nodes * rec.Desc.Replicas; len(seen) != want {
		t.Fatalf("%d processes reported, want %d", len(seen), want)
	}
}

// checkJobFolderOutput checks that the submitter's job folder keeps the
// tagged stdout of every process ("[3]", "[3.1]" for copy 1 of rank 3).
func checkJobFolderOutput(t *testing.T, ln *launchNet, rec job.Record) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(ln.dirs[0], "jobs", string(rec.ID), "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	tagged := regexp.MustCompile(`^\[(\d+)(?:\.\d+)?\] at (\d+) \d+ \S+$`)
	for _, l := range lines {
		m := tagged.FindStringSubmatch(l)
		if m == nil || m[1] != m[2] {
			t.Fatalf("job folder stdout line %q is not tagged with its rank", l)
		}
	}
	if want := rec.Desc.Nodes * rec.Desc.Replicas; len(lines) != want {
		t.Fatalf("job folder stdout holds %d lines, want %d", len(lines), want)
	}
}
