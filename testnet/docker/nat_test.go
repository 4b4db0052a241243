package docker

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/node"
)

// TestDockerNAT: two homes, each an internal docker network behind its
// own NAT gateway (a container on the home and the public network,
// masquerading: the rule is put into its namespace from the host, so the
// image needs nothing), and a public network with public agents and a
// stand-in public DHT (a plain kad-dht server run by the test on the public
// bridge's host address). The agent of each home joins with --bootstrap
// public; they find each other, get relay reservations on the public
// agents, hole-punch where the NATs let them, and run a job spanning both
// homes. Each subtest reports whether their connection ended direct or
// relayed, and removes every container and network it made.
func TestDockerNAT(t *testing.T) {
	needDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	tag := "zorilla-testnet:test"
	bin := buildForTest(t, ctx, tag)
	// On a private range (what a lab has) libp2p does not hole-punch: the
	// homes stay relayed and the job runs over the relay.
	t.Run("private range", func(t *testing.T) {
		r := natTopology(t, ctx, tag, bin, "")
		if r.conn != node.ConnRelayed {
			t.Errorf("homes on a private range ended %s, want relayed (libp2p punches only public addresses)", r.conn)
		}
	})
	// On a public range (11.77.x.0/24, internal to this machine: nothing
	// leaves it) they punch a hole through both NATs.
	t.Run("public range", func(t *testing.T) {
		r := natTopology(t, ctx, tag, bin, publicSubnet(0))
		if r.conn != node.ConnDirect {
			t.Errorf("homes on a public range ended %s, want direct (hole punched)", r.conn)
		}
	})
}

// TestDockerNATRuns builds the public-range NAT topology
// ZORILLA_NAT_RUNS times and prints, per run, whether the homes' pair
// ended direct or relayed (BENCHMARKS.md, issue 12).
func TestDockerNATRuns(t *testing.T) {
	runs := envInt(t, "ZORILLA_NAT_RUNS")
	if runs == 0 {
		t.Skip("skipped: set ZORILLA_NAT_RUNS=N to build the NAT topology N times and count direct and relayed pairs")
	}
	needDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(runs)*3*time.Minute+5*time.Minute)
	defer cancel()
	tag := "zorilla-testnet:test"
	bin := buildForTest(t, ctx, tag)
	var rows []natRun
	for i := range runs {
		t.Run(fmt.Sprint(i+1), func(t *testing.T) { rows = append(rows, natTopology(t, ctx, tag, bin, publicSubnet(i))) })
	}
	direct := 0
	var b strings.Builder
	fmt.Fprintf(&b, "\n| run | neighbours after | direct after | pair ended | direct path seen | job |\n| --- | --- | --- | --- | --- | --- |\n")
	for i, r := range rows {
		if r.conn == node.ConnDirect {
			direct++
		}
		fmt.Fprintf(&b, "| %d | %v | %s | %s | %s | %s |\n", i+1, r.neighbours.Round(10*time.Millisecond), r.directAfter(), r.conn, r.via, r.job)
	}
	t.Logf("%s\n%d of %d pairs ended direct, %d relayed", b.String(), direct, len(rows), len(rows)-direct)
}

// natRun is what one build of the NAT topology showed.
type natRun struct {
	conn       string        // how the homes' agents are connected at the end
	via        string        // the TCP connections home 1's agent has to home 2's gateway
	neighbours time.Duration // from the homes' start until they are neighbours
	direct     time.Duration // from the homes' start until a direct connection, 0 if none
	job        string        // how the job across both homes ended
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
