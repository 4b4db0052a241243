package testnet

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/node"
)

// buildMPICH compiles worker/pmi/testdata/NAME.c with Debian's MPICH and
// stores it in nd's blob store, or skips the test.
func buildMPICH(t *testing.T, nd *node.Node, name string) proto.FileRef {
	t.Helper()
	cc, err := exec.LookPath("mpicc.mpich")
	if err != nil {
		t.Skip("mpicc.mpich not found: install Debian's mpich and libmpich-dev (.ci/run does where apt is available)")
	}
	out := filepath.Join(t.TempDir(), name)
	src := filepath.Join("..", "worker", "pmi", "testdata", name+".c")
	if b, err := exec.Command(cc, "-O2", "-o", out, src).CombinedOutput(); err != nil {
		t.Fatalf("mpicc %s: %v\n%s", name, err, b)
	}
	h, size, err := nd.Blobs().PutFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return proto.FileRef{Name: name, Hash: h.String(), Size: size}
}

var helloLine = regexp.MustCompile(`^hello rank (\d+) of (\d+) on \S+ node-local (\d+)$`)

// Unmodified MPICH programs under `submit --pmi` on a loopback
// testnet of 4 agents of 3 slots each, their ranks spread or
// concentrated over them. The agents give jobs the host's network: MPICH's
// ranks on different agents connect to each other directly.
func TestPMILoopback(t *testing.T) {
	if testing.Short() {
		t.Skip("4 agents and MPICH processes")
	}
	if _, err := exec.LookPath("mpicc.mpich"); err != nil {
		t.Skip("mpicc.mpich not found: install Debian's mpich and libmpich-dev (.ci/run does where apt is available)")
	}
	ln := startLaunchNet(t, 4, 3, func(_ int, cfg *node.Config) {
		cfg.Open = true
		cfg.JobNetwork = node.JobNetworkHost
	})
	nd := ln.Nodes[0]
	hello, ring, coll, fail := buildMPICH(t, nd, "hello"), buildMPICH(t, nd, "ring"), buildMPICH(t, nd, "coll"), buildMPICH(t, nd, "fail")
	run := func(t *testing.T, prog proto.FileRef, n int, s job.Strategy, args ...string) (job.Record, []job.Update) {
		t.Helper()
		d := job.NewDescription(prog.Name, args, n)
		d.PMI, d.Strategy = true, s
		w := submitJob(t, nd, d, prog)
		return w.wait(t), w.updates()
	}
	for _, s := range []job.Strategy{job.Spread, job.Concentrate} {
		for n := 1; n <= 9; n++ {
			t.Run(fmt.Sprintf("hello/%s/n=%d", s, n), func(t *testing.T) {
				rec, ups := run(t, hello, n, s)
				if rec.State != job.Done || rec.Exit != 0 {
					t.Fatalf("job ended %s (exit %d): %s\n%s", rec.State, rec.Exit, rec.Reason, outputOf(ups))
				}
				checkHello(t, rec, ups, n)
			})
		}
	}
	for _, c := range []struct {
		prog proto.FileRef
		n    int
		s    job.Strategy
	}{{ring, 9, job.Spread}, {ring, 5, job.Concentrate}, {coll, 9, job.Spread}, {coll, 7, job.Concentrate}, {coll, 2, job.Spread}} {
		t.Run(fmt.Sprintf("%s/%s/n=%d", c.prog.Name, c.s, c.n), func(t *testing.T) {
			rec, ups := run(t, c.prog, c.n, c.s)
			out := outputOf(ups)
			if rec.State != job.Done || rec.Exit != 0 || strings.Contains(out, "WRONG") || !strings.Contains(out, " ok") {
				t.Fatalf("job ended %s (exit %d): %s\n%s", rec.State, rec.Exit, rec.Reason, out)
			}
		})
	}
	t.Run("bad-client", func(t *testing.T) {
		// A rank that breaks the protocol gets rc=-1 answers, then its
		// connection closed; the job fails on its exit, and the agents
		// run the next jobs (the subtests after this one).
		bad := uploadScript(t, nd, `fd=$PMI_FD
ask() { echo "$1" >&$fd; read -r line <&$fd; echo "reply $line"; }
ask "cmd=init pmi_version=1 pmi_subversion=1"
ask "cmd=get_my_kvsname"
kvs=$(echo "$line" | sed 's/.*kvsname=\([^ ]*\).*/\1/')
ask "cmd=get kvsname=$kvs key=nope"
ask "cmd=put kvsname=$kvs key=k value=$(head -c 2000 /dev/zero | tr '\0' v)"
exit 3`)
		d := job.NewDescription(bad.Name, nil, 1)
		d.PMI, d.Strategy = true, job.Spread
		w := submitJob(t, nd, d, bad)
		rec := w.wait(t)
		out := outputOf(w.updates())
		if rec.State != job.Failed || rec.Exit != 3 {
			t.Fatalf("job ended %s (exit %d): %s\n%s", rec.State, rec.Exit, rec.Reason, out)
		}
		for _, want := range []string{"reply cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0",
			"reply cmd=get_result rc=-1 msg=key_nope_not_found", "reply cmd=error rc=-1 msg=pmi:_protocol_error:_put_needs_a_value"} {
			if !strings.Contains(out, want) {
				t.Errorf("want %q in\n%s", want, out)
			}
		}
	})
	t.Run("net-devices", func(t *testing.T) {
		// Every host of the job is this machine: MPICH's transports are
		// pointed at loopback alone, not at every interface the machine
		// has (one that vanishes during MPI_Init fails it).
		show := uploadScript(t, nd, `echo "devices=$UCX_NET_DEVICES iface=$FI_TCP_IFACE"`)
		d := job.NewDescription(show.Name, nil, 3)
		d.PMI, d.Strategy = true, job.Spread
		w := submitJob(t, nd, d, show)
		rec, out := w.wait(t), outputOf(w.updates())
		if rec.State != job.Done || strings.Count(out, "devices=lo iface=lo") != 3 {
			t.Fatalf("job ended %s (exit %d): %s; want 3 ranks on loopback alone:\n%s", rec.State, rec.Exit, rec.Reason, out)
		}
	})
	t.Run("abort", func(t *testing.T) {
		rec, ups := run(t, fail, 6, job.Spread, "abort", "4")
		if rec.State != job.Failed || rec.Exit != 7 || !strings.Contains(rec.Reason, "rank 4") {
			t.Fatalf("job ended %s (exit %d): %s\n%s", rec.State, rec.Exit, rec.Reason, outputOf(ups))
		}
	})
	t.Run("exit-non-zero", func(t *testing.T) {
		rec, ups := run(t, fail, 6, job.Concentrate, "exit", "2")
		if rec.State != job.Failed || rec.Exit != 3 || !strings.Contains(rec.Reason, "rank 2") {
			t.Fatalf("job ended %s (exit %d): %s\n%s", rec.State, rec.Exit, rec.Reason, outputOf(ups))
		}
	})
}

// checkHello checks that every rank said hello once with the right size,
// and that the ranks MPICH counts on its node are those the plan put on
// the rank's host (PMI_process_mapping).
func checkHello(t *testing.T, rec job.Record, ups []job.Update, n int) {
	t.Helper()
	perHost := map[string]int{}
	hostOf := map[int]string{}
	for _, hp := range rec.Plan.Hosts {
		for _, p := range hp.Procs {
			perHost[hp.Offer.Peer.String()]++
			hostOf[p.Rank] = hp.Offer.Peer.String()
		}
	}
	seen := map[int]bool{}
	for _, l := range linesMatching(ups, helloLine) {
		var rank, size, local int
		fmt.Sscan(l.sub[0], &rank)
		fmt.Sscan(l.sub[1], &size)
		fmt.Sscan(l.sub[2], &local)
		if rank != l.u.Rank || size != n || seen[rank] {
			t.Errorf("line %q from rank %d", l.u.Line, l.u.Rank)
		}
		if want := perHost[hostOf[rank]]; local != want {
			t.Errorf("rank %d: MPICH counts %d ranks on its node, the plan %d", rank, local, want)
		}
		seen[rank] = true
	}
	if len(seen) != n {
		t.Errorf("%d of %d ranks said hello\n%s", len(seen), n, outputOf(ups))
	}
}

func outputOf(ups []job.Update) string {
	var b strings.Builder
	for _, u := range ups {
		if u.Kind == "output" {
			fmt.Fprintf(&b, "[%d] %s\n", u.Rank, u.Line)
		}
	}
	return b.String()
}

// TestPMIIsolatedNetwork: agents whose jobs see only loopback decline at
// the advert an MPICH job spread over several of them, and the job fails
// saying so, naming the setting that allows it (one host alone runs it:
// its ranks meet through shared memory).
func TestPMIIsolatedNetwork(t *testing.T) {
	if testing.Short() {
		t.Skip("agents and MPICH processes")
	}
	if _, err := exec.LookPath("mpicc.mpich"); err != nil {
		t.Skip("mpicc.mpich not found: install Debian's mpich and libmpich-dev (.ci/run does where apt is available)")
	}
	ln := startLaunchNet(t, 2, 2, func(_ int, cfg *node.Config) {
		cfg.Open = true
		cfg.JobNetwork = node.JobNetworkIsolated
	})
	if !strings.HasPrefix(ln.Nodes[0].Sandbox().Network, "own") {
		t.Skip("this machine gives jobs no network namespace")
	}
	hello := buildMPICH(t, ln.Nodes[0], "hello")
	d := job.NewDescription(hello.Name, nil, 2)
	d.PMI, d.Strategy, d.Retries = true, job.Spread, 0
	rec := submitJob(t, ln.Nodes[0], d, hello).wait(t)
	if rec.State != job.Failed || !strings.Contains(rec.Reason, "2 give jobs only loopback") ||
		!strings.Contains(rec.Reason, "--job-network host") || rec.Attempts > 0 {
		t.Fatalf("job ended %s after %d starts: %s", rec.State, rec.Attempts, rec.Reason)
	}
	t.Logf("spread over 2 hosts: %s", rec.Reason)
	d.Strategy = job.Concentrate
	w := submitJob(t, ln.Nodes[0], d, hello)
	rec = w.wait(t)
	if rec.State != job.Done {
		t.Fatalf("one host: job ended %s: %s\n%s", rec.State, rec.Reason, outputOf(w.updates()))
	}
	checkHello(t, rec, w.updates(), 2)
}
