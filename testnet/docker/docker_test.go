package docker

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/job"
)

// The docker testnet: 12 agent containers on 3 sites, latency
// between the sites, RTTs that rank the sites, a job across them submitted
// from the host, a container killed mid-flood without stopping the
// allocation, jobs that lose a host to a kill or a cut while they compute,
// faults and their repair, and nothing left after down.
func TestDockerTestnet(t *testing.T) {
	needDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	tag, bin := testImageBuild(t, ctx)

	dir, err := os.MkdirTemp("", "zt") // short: the agents' sockets live here
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	cfg := DefaultConfig()
	cfg.Name, cfg.Dir, cfg.Image = fmt.Sprintf("zt%d", os.Getpid()%100000), filepath.Join(dir, "t"), tag
	cfg.Shaper = shaperForTest()
	layout, err := ParseSitesString("a 4 x 2; b 4 x 2 at 10 ms; c 4 x 2 at 25 ms")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	tn, err := Up(ctx, cfg, layout)
	if err != nil {
		t.Fatal(err)
	}
	netIDs := networkIDs(t, ctx, tn)
	downed := false
	t.Cleanup(func() {
		if !downed {
			_, _ = Down(context.Background(), cfg, false)
		}
	})
	t.Logf("12 agents up in %v, latency by %s", time.Since(start).Round(time.Millisecond), tn.State().Shaper)

	awaitCtx, stop := context.WithTimeout(ctx, 2*time.Minute)
	defer stop()
	if err := tn.Await(awaitCtx, "neighbours", time.Second, Converged(5)); err != nil {
		t.Fatal(err)
	}
	t.Logf("converged after %v", time.Since(start).Round(time.Millisecond))

	t.Run("rtt ranks sites", func(t *testing.T) { checkRTTRanking(t, ctx, tn, layout) })
	t.Run("job from the host", func(t *testing.T) { checkJob(t, ctx, tn, bin) })
	t.Run("kill mid-flood", func(t *testing.T) { checkKillMidFlood(t, ctx, tn, bin) })
	t.Run("failover", func(t *testing.T) { checkFailover(t, ctx, tn, bin) })
	t.Run("faults", func(t *testing.T) { checkFaults(t, ctx, tn) })

	r, err := Down(ctx, cfg, false)
	downed = true
	if err != nil {
		t.Fatal(err)
	}
	checkNothingLeft(t, ctx, cfg, r, netIDs)
}

func checkRTTRanking(t *testing.T, ctx context.Context, tn *Testnet, l Layout) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var report string
	var last error
	for {
		rtts, err := siteRTTs(ctx, tn)
		if err == nil {
			report, last = rankedLikeLayout(l, tn.State().LocalRTT, rtts)
			if last == nil {
				t.Logf("agents' measured RTTs (neighbours):\n%s", report)
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("RTTs do not rank the sites: %v\n%s", last, report)
		case <-time.After(2 * time.Second):
		}
	}
}

func checkJob(t *testing.T, ctx context.Context, tn *Testnet, bin string) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	first := tn.Containers()[0]
	start := time.Now()
	out, errOut, err := runSubmit(ctx, bin, first.DataDir, "-n", "8", filepath.Join(bin, "examples", "hostname"))
	if err != nil {
		t.Fatalf("zorilla submit: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	hosts := checkHostnameOutput(t, out, 8)
	t.Logf("hostname -n 8 from the host through %s in %v: ranks per host %v", first.Name, time.Since(start).Round(time.Millisecond), hosts)
	if len(hosts) < 4 {
		t.Fatalf("8 ranks on %d hosts of P=2, want at least 4", len(hosts))
	}
}

// checkKillMidFlood kills an agent while a job's advert floods. The job
// (20 ranks, concentrate: 10 of the 12 hosts) is not satisfied by the
// first radius (the submitter's 8 or so neighbours), so the flood waits a
// second before going wider; the victim, a neighbour in the submitter's
// own site, has offered by the time docker kills it, and being among the
// closest it is placed. Its commit fails and the job must still be
// allocated and run, on the spares or after a new match.
func checkKillMidFlood(t *testing.T, ctx context.Context, tn *Testnet, bin string) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	cs := tn.Containers()
	submitter, victim := cs[4], cs[5] // b-0 submits, b-1 dies
	start := time.Now()
	id, err := submitAPI(ctx, submitter.DataDir, filepath.Join(bin, "examples", "hostname"), 20, job.Concentrate)
	if err != nil {
		t.Fatal(err)
	}
	if err := tn.Kill(ctx, victim.Short()); err != nil {
		t.Fatal(err)
	}
	killed := time.Since(start)
	r, err := awaitJob(ctx, submitter.DataDir, id)
	if err != nil {
		t.Fatal(err)
	}
	if r.State != job.Done || r.Exit != 0 || r.Plan == nil {
		t.Fatalf("job %s ended %s (exit %d, %s); history %+v", id, r.State, r.Exit, r.Reason, r.History)
	}
	procs := 0
	for _, h := range r.Plan.Hosts {
		if h.Offer.Peer == victim.PeerID {
			t.Fatalf("the job ran on %s, killed while it flooded", victim.Name)
		}
		procs += len(h.Procs)
	}
	if procs != 20 {
		t.Fatalf("%d processes placed, want 20", procs)
	}
	var states []string
	for _, e := range r.History {
		states = append(states, fmt.Sprintf("%s(+%v)", e.State, e.At.Sub(r.Created).Round(time.Millisecond)))
	}
	offered := slices.ContainsFunc(r.Offers, func(o job.Offer) bool { return o.Peer == victim.PeerID })
	t.Logf("killed %s %v after submitting %s through %s: %s on %d hosts in %v; victim in the final rlist: %v, marked unavailable: %v; states %s",
		victim.Name, killed.Round(time.Millisecond), id, submitter.Name, r.State, len(r.Plan.Hosts),
		r.Updated.Sub(r.Created).Round(time.Millisecond), offered, slices.Contains(r.Unavailable, victim.PeerID), strings.Join(states, " "))
}

// checkFaults brings the killed container back, pauses and cuts some, and
// heals them, checking docker's and the agents' view after each.
func checkFaults(t *testing.T, ctx context.Context, tn *Testnet) {
	victim := tn.Containers()[5]
	step := func(what string, op func(context.Context, string) error, target string, cond func(Status) error) {
		t.Helper()
		if err := op(ctx, target); err != nil {
			t.Fatalf("%s %s: %v", what, target, err)
		}
		actx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := tn.Await(actx, what+" "+target, 500*time.Millisecond, cond); err != nil {
			t.Fatal(err)
		}
	}
	state := func(name, want string, nets int) func(Status) error {
		return func(s Status) error {
			for _, c := range s.Containers {
				if c.Name == name && (c.State != want || len(c.Networks) != nets) {
					return fmt.Errorf("%s is %s on %d networks, want %s on %d", name, c.State, len(c.Networks), want, nets)
				}
			}
			return nil
		}
	}
	// Back from the dead with its peer ID; its neighbours and latency too.
	step("start", tn.Start, victim.Short(), func(s Status) error {
		if err := state(victim.Name, "running", 2)(s); err != nil {
			return err
		}
		return Converged(3)(s)
	})
	step("pause", tn.Pause, "c-0", state(tn.Containers()[8].Name, "paused", 2))
	step("unpause", tn.Unpause, "c-0", state(tn.Containers()[8].Name, "running", 2))
	step("cut", tn.Cut, "c", func(s Status) error {
		for _, c := range s.Containers[8:] {
			if len(c.Networks) != 1 || c.Networks[0] != tn.netName("c") {
				return fmt.Errorf("%s on %v after cutting site c, want its site network only", c.Name, c.Networks)
			}
		}
		return nil
	})
	step("heal", tn.Heal, "c", func(s Status) error {
		for _, c := range s.Containers[8:] {
			if len(c.Networks) != 2 {
				return fmt.Errorf("%s on %v after healing", c.Name, c.Networks)
			}
		}
		return Converged(3)(s)
	})
	step("cut", tn.Cut, "a-1", state(tn.Containers()[1].Name, "running", 0))
	step("heal", tn.Heal, "a-1", state(tn.Containers()[1].Name, "running", 2))
	if _, _, err := tn.Resolve("nowhere"); err == nil {
		t.Fatal("an unknown target resolved")
	}
}

func networkIDs(t *testing.T, ctx context.Context, tn *Testnet) []string {
	t.Helper()
	ids, err := tn.docker.lines(ctx, "network", "ls", "-q", "--filter", tn.labelFilter())
	if err != nil || len(ids) != 4 {
		t.Fatalf("networks %v, %v: want 4 (3 sites and the wan)", ids, err)
	}
	return ids
}

// checkNothingLeft checks that down removed every container, network,
// bridge interface and data dir of the testnet, and that the host has no
// qdisc of ours (shaping lives in the containers' namespaces).
func checkNothingLeft(t *testing.T, ctx context.Context, cfg Config, r Removed, netIDs []string) {
	t.Helper()
	if r.Containers < 12 || r.Networks != 4 || r.DataDirs != 12 {
		t.Fatalf("down removed %+v, want the 12 agents (and the delayer), 4 networks, 12 data dirs", r)
	}
	d := dockerCLI{"docker"}
	for _, q := range [][]string{{"ps", "-aq", "--filter", "label=" + LabelTestnet + "=" + cfg.Name},
		{"network", "ls", "-q", "--filter", "label=" + LabelTestnet + "=" + cfg.Name}} {
		if left, err := d.lines(ctx, q...); err != nil || len(left) > 0 {
			t.Fatalf("docker %v after down: %v %v", q, left, err)
		}
	}
	links, err := exec.CommandContext(ctx, "ip", "-o", "link", "show").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range netIDs {
		if br := "br-" + id[:12]; strings.Contains(string(links), br) {
			t.Fatalf("bridge %s is left after down", br)
		}
	}
	qdiscs, err := exec.CommandContext(ctx, "tc", "qdisc", "show").Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(qdiscs), "netem") || slices.ContainsFunc(netIDs, func(id string) bool { return strings.Contains(string(qdiscs), id[:12]) }) {
		t.Fatalf("qdiscs left on the host:\n%s", qdiscs)
	}
	if _, err := os.Stat(cfg.Dir); !os.IsNotExist(err) {
		t.Fatalf("testnet dir %s left after down: %v", cfg.Dir, err)
	}
}
