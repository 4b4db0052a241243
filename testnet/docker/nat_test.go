package docker

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/node"
)

// TestDockerNAT: two homes, each a docker network behind its own NAT
// gateway (a container on the home and the public network that
// masquerades and drops what comes unasked, as a home router does: the
// rules are put into its namespace from the host, so the image needs
// nothing), and a public network with public agents and a stand-in public
// DHT (a plain kad-dht server run by the test on the public bridge's host
// address). The agent of each home joins with --bootstrap public; they
// find each other, get relay reservations on the public agents, hole-punch
// where libp2p tries, and run a job spanning both homes. Each subtest
// reports whether their connection ended direct or relayed, and removes
// every container and network it made. The public range's assertion of a
// direct pair held in 30 of 30 runs of TestDockerNATRuns (over QUIC).
func TestDockerNAT(t *testing.T) {
	needDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	tag, bin := testImageBuild(t, ctx)
	// On a private range (what a lab has) libp2p does not hole-punch: the
	// homes stay relayed and the job runs over the relay.
	t.Run("private range", func(t *testing.T) {
		r := natTopology(t, ctx, tag, bin, "", natVariant{gatewayDrop, true})
		if r.conn != node.ConnRelayed {
			t.Errorf("homes on a private range ended %s, want relayed (libp2p punches only public addresses)", r.conn)
		}
	})
	// On a public range (11.77.x.0/24, internal to this machine: nothing
	// leaves it) they punch a hole through both NATs.
	t.Run("public range", func(t *testing.T) {
		r := natTopology(t, ctx, tag, bin, publicSubnet(0), natVariant{gatewayDrop, true})
		if r.conn != node.ConnDirect {
			t.Errorf("homes on a public range ended %s, want direct (hole punched)", r.conn)
		}
	})
}

// TestDockerNATRuns builds the public-range NAT topology
// ZORILLA_NAT_RUNS times for each gateway mode of ZORILLA_NAT_GATEWAY
// (comma-separated: drop, rst, listen; drop when unset) and each
// transport set of ZORILLA_NAT_TRANSPORTS (tcp+quic, tcp; tcp+quic when
// unset), and prints, per run, whether the homes' pair ended direct or
// relayed (BENCHMARKS.md, NAT traversal).
func TestDockerNATRuns(t *testing.T) {
	runs := envInt(t, "ZORILLA_NAT_RUNS")
	if runs == 0 {
		t.Skip("skipped: set ZORILLA_NAT_RUNS=N to build the NAT topology N times and count direct and relayed pairs")
	}
	variants := natVariants(t)
	needDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(runs*len(variants))*2*time.Minute+5*time.Minute)
	defer cancel()
	tag, bin := testImageBuild(t, ctx)
	var b strings.Builder
	fmt.Fprintf(&b, "\n| variant | run | neighbours after | direct after | pair ended | answered flows between the homes | reachability (AutoNAT) | job |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	var sums []string
	for _, v := range variants {
		direct, failed := 0, 0
		for i := range runs {
			var r natRun
			if !t.Run(fmt.Sprintf("%s/%d", v, i+1), func(t *testing.T) { r = natTopology(t, ctx, tag, bin, publicSubnet(i), v) }) {
				failed++
				r.conn = "run failed"
			}
			if r.conn == node.ConnDirect {
				direct++
			}
			fmt.Fprintf(&b, "| %s | %d | %v | %s | %s | %s | %s | %s |\n", v, i+1, r.neighbours.Round(10*time.Millisecond), r.directAfter(), r.conn, r.via, r.reach, r.job)
		}
		sums = append(sums, fmt.Sprintf("%s: %d of %d pairs direct, %d relayed, %d runs failed", v, direct, runs, runs-direct-failed, failed))
	}
	t.Logf("%s\n%s", b.String(), strings.Join(sums, "\n"))
}

// natVariants reads ZORILLA_NAT_GATEWAY and ZORILLA_NAT_TRANSPORTS.
func natVariants(t *testing.T) []natVariant {
	t.Helper()
	list := func(env, def string, valid []string) []string {
		v := os.Getenv(env)
		if v == "" {
			v = def
		}
		out := strings.Split(v, ",")
		for _, s := range out {
			if !slices.Contains(valid, s) {
				t.Fatalf("%s: %q: want a comma-separated list of %v", env, s, valid)
			}
		}
		return out
	}
	var vs []natVariant
	for _, g := range list("ZORILLA_NAT_GATEWAY", gatewayDrop, gatewayModes) {
		for _, tr := range list("ZORILLA_NAT_TRANSPORTS", "tcp+quic", []string{"tcp+quic", "tcp"}) {
			vs = append(vs, natVariant{gateway: g, quic: tr == "tcp+quic"})
		}
	}
	return vs
}

// natRun is what one build of the NAT topology showed.
type natRun struct {
	conn       string        // how the homes' agents are connected at the end
	via        string        // the TCP connections home 1's agent has to home 2's gateway
	neighbours time.Duration // from the homes' start until they are neighbours
	direct     time.Duration // from the homes' start until a direct connection, 0 if none
	job        string        // how the job across both homes ended
	reach      string        // what each home says of its reachability and addresses
}

func (r natRun) directAfter() string {
	if r.direct == 0 {
		return "-"
	}
	return r.direct.Round(10 * time.Millisecond).String()
}

// publicSubnet is a /24 of a public range for the public network, distinct
// per run and per test process (nothing leaves the machine: the network is
// internal).
func publicSubnet(run int) string {
	return fmt.Sprintf("11.%d.%d.0/24", 77+run%100, os.Getpid()%250)
}

// envInt reads a count from the environment: 0 when unset.
func envInt(t *testing.T, name string) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return 0
	}
	var n int
	if _, err := fmt.Sscan(v, &n); err != nil || n < 0 {
		t.Fatalf("%s=%q: want a count", name, v)
	}
	return n
}
