package docker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/node"
)

// natFlows lists the answered flows that the gateway of pid tracks from
// address from to address to: "tcp 4001->4001" for an established TCP
// connection, "udp 4001->4001" for a UDP flow that had answers.
func natFlows(ctx context.Context, pid int, from, to string) (string, error) {
	out, err := nsenterRun(ctx, pid, "cat", "/proc/net/nf_conntrack")
	if err != nil {
		return "", fmt.Errorf("gateway's connection tracking: %w", err)
	}
	var flows []string
	for l := range strings.SplitSeq(out, "\n") {
		f := strings.Fields(l)
		if len(f) < 4 || !strings.Contains(l, " src="+from+" dst="+to+" ") || strings.Contains(l, "[UNREPLIED]") ||
			(f[2] == "tcp" && !slices.Contains(f, "ESTABLISHED")) {
			continue
		}
		var sport, dport string
		for _, kv := range f {
			if v, ok := strings.CutPrefix(kv, "sport="); ok && sport == "" {
				sport = v
			} else if v, ok := strings.CutPrefix(kv, "dport="); ok && dport == "" {
				dport = v
			}
		}
		flows = append(flows, f[2]+" "+sport+"->"+dport)
	}
	slices.Sort(flows)
	return strings.Join(slices.Compact(flows), ", "), nil
}

// awaitReach reports the reachability of the homes' agents (of dirs a1
// and a2) as "R1 / R2", and the addresses each advertises. AutoNAT (v1,
// whose verdict the agents report) first asks 15 s after start, so a run
// has usually ended before it answers: ZORILLA_NAT_REACH_WAIT waits that
// long for both verdicts.
func awaitReach(t *testing.T, ctx context.Context, a1, a2 string) (reach, addrs1, addrs2 string) {
	t.Helper()
	var wait time.Duration
	if v := os.Getenv("ZORILLA_NAT_REACH_WAIT"); v != "" {
		var err error
		if wait, err = time.ParseDuration(v); err != nil {
			t.Fatalf("ZORILLA_NAT_REACH_WAIT=%q: want a duration: %v", v, err)
		}
	}
	deadline := time.Now().Add(wait)
	for {
		r1, addrs1 := reachOf(ctx, a1)
		r2, addrs2 := reachOf(ctx, a2)
		if (!strings.HasPrefix(r1, "unknown") && !strings.HasPrefix(r2, "unknown")) || time.Now().After(deadline) {
			return r1 + " / " + r2, addrs1, addrs2
		}
		select {
		case <-ctx.Done():
			return r1 + " / " + r2, addrs1, addrs2
		case <-time.After(time.Second):
		}
	}
}

// reachOf says what the agent of dir reports of its reachability (with
// how many addresses AutoNAT v2 found reachable and not), and the
// addresses it advertises (relay addresses shortened to "circuit") with
// AutoNAT v2's verdicts.
func reachOf(ctx context.Context, dir string) (string, string) {
	cl, err := node.Dial(dir)
	if err != nil {
		return err.Error(), ""
	}
	defer cl.Close()
	info, err := cl.ID(ctx)
	if err != nil {
		return err.Error(), ""
	}
	var addrs []string
	for _, a := range info.Addrs {
		if strings.Contains(a, "/p2p-circuit") {
			a = "circuit"
		} else {
			a = strings.Split(a, "/p2p/")[0]
		}
		if !slices.Contains(addrs, a) {
			addrs = append(addrs, a)
		}
	}
	reach := info.Reachability
	if len(info.Reachable)+len(info.Unreachable) > 0 {
		reach += fmt.Sprintf(" (v2: %d reachable, %d not)", len(info.Reachable), len(info.Unreachable))
	}
	return reach, fmt.Sprintf("%s; AutoNAT v2: reachable %v, unreachable %v", strings.Join(addrs, " "), info.Reachable, info.Unreachable)
}

// awaitConn polls how the agent of dir is connected to neighbour id until
// ok says so or wait runs out (0: once), and returns the last answer: ""
// while id is not its neighbour.
func awaitConn(t *testing.T, ctx context.Context, dir string, id peer.ID, wait time.Duration, ok func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		conn := ""
		if cl, err := node.Dial(dir); err == nil {
			info, err := cl.Peers(ctx)
			cl.Close()
			for _, nb := range info.Neighbours {
				if err == nil && nb.ID == id {
					conn = nb.Conn
				}
			}
		}
		if ok(conn) || time.Now().After(deadline) {
			return conn
		}
		select {
		case <-ctx.Done():
			return conn
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// runHomesJob runs a stencil job on the two agents labelled "home",
// submitted to the agent of dir, and fails the test unless it ends done
// and verified.
func runHomesJob(t *testing.T, ctx context.Context, dir, bin string) string {
	t.Helper()
	cl, err := node.Dial(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	b, err := cl.Upload(ctx, filepath.Join(bin, "examples", "stencil"))
	if err != nil {
		t.Fatal(err)
	}
	jd := job.NewDescription("stencil", []string{"-iters", "50", "-delay", "5ms", "-block", "10000"}, 2)
	jd.Strategy, jd.Require.Labels = job.Spread, []string{"home"}
	id, err := cl.Submit(ctx, node.SubmitRequest{Description: jd, Program: proto.FileRef{Name: "stencil", Hash: b.Hash, Size: b.Size}})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := awaitJob(ctx, dir, id)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := os.ReadFile(filepath.Join(dir, "jobs", string(id), "stdout"))
	if rec.State != job.Done || !strings.Contains(string(out), "verified") {
		errOut, _ := os.ReadFile(filepath.Join(dir, "jobs", string(id), "stderr"))
		t.Fatalf("job across the homes ended %s (%s):\n%s\nstderr:\n%s", rec.State, rec.Reason, out, errOut)
	}
	return "done, verified"
}

// refusedHomesPMIJob runs `zorilla submit --pmi` in the home of data dir
// dir, one rank per home, while the homes' agents are joined only through
// a relay: MPICH's ranks open TCP connections to each other's addresses,
// which a NAT drops, so the placement must be refused before anything is
// placed or started, naming the other home's agent. The
// program is never run (a Go example: the refusal comes first).
func refusedHomesPMIJob(t *testing.T, ctx context.Context, dir, bin string, behind peer.ID) string {
	t.Helper()
	out, errOut, err := runSubmit(ctx, bin, dir, "--pmi", "-n", "2", "-a", "spread", "--require", "label=home",
		filepath.Join(bin, "examples", "stencil"))
	s := behind.String()
	want := "host " + s[:4] + "…" + s[len(s)-4:] + " is reachable only through relays"
	if err == nil || !strings.Contains(errOut, want) || strings.Contains(errOut, "placed") {
		t.Fatalf("zorilla submit --pmi across the relayed homes: %v, want it refused at placement saying %q\nstdout:\n%s\nstderr:\n%s",
			err, want, out, errOut)
	}
	return strings.TrimSpace(errOut)
}

// agentID waits for the agent of data dir dir to answer and returns its ID.
func agentID(t *testing.T, ctx context.Context, dir string) peer.ID {
	t.Helper()
	for {
		if cl, err := node.Dial(dir); err == nil {
			info, err := cl.ID(ctx)
			cl.Close()
			if err == nil {
				return info.ID
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("agent of %s never answered", dir)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// describeAgents says what each agent under dir reports of itself and its
// neighbours, for a failure message.
func describeAgents(dir string) string {
	var b strings.Builder
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		cl, err := node.Dial(filepath.Join(dir, e.Name()))
		if err != nil {
			fmt.Fprintf(&b, "\n%s: %v", e.Name(), err)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		id, ierr := cl.ID(ctx)
		peers, perr := cl.Peers(ctx)
		cancel()
		cl.Close()
		fmt.Fprintf(&b, "\n%s: %+v (%v); neighbours %+v (%v)", e.Name(), id, ierr, peers.Neighbours, perr)
		if id.Rendezvous != nil {
			fmt.Fprintf(&b, " rendezvous %+v", *id.Rendezvous)
		}
	}
	return b.String()
}
