package testnet

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/node"
)

// inNetNS is set in the environment of a test run again inside a network
// namespace of its own.
const inNetNS = "ZORILLA_TEST_IN_NETNS"

// TestMDNSFindsAgents: agents with no bootstrap peer at all, on one local
// network, find each other by multicast DNS and become neighbours. The
// test runs itself again inside a network namespace of its own (unshare,
// with multicast on its loopback), so no multicast leaves this machine; it
// skips where that cannot be done (not root, no unshare or ip).
func TestMDNSFindsAgents(t *testing.T) {
	if testing.Short() {
		t.Skip("agents on loopback in a network namespace")
	}
	if os.Getenv(inNetNS) == "" {
		unshare, err := exec.LookPath("unshare")
		if err != nil {
			t.Skip("no unshare: cannot run mDNS in a network namespace of its own")
		}
		cmd := exec.Command(unshare, "--net", "sh", "-c", `ip link set lo up && ip link set lo multicast on && exec "$0" "$@"`,
			os.Args[0], "-test.run", "^TestMDNSFindsAgents$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), inNetNS+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			if !strings.Contains(string(out), "=== RUN") { // the test never ran: no namespace
				t.Skipf("cannot make a network namespace here (%v): %s", err, out)
			}
			t.Fatalf("in a network namespace: %v\n%s", err, out)
		}
		t.Logf("in a network namespace:\n%s", out)
		return
	}
	var agents []*node.Node
	for range 3 {
		cfg := node.DefaultConfig()
		e2eConfig(&cfg, 1)
		cfg.Network, cfg.Open, cfg.MDNS = "lan-test", true, true
		cfg.Listen = []string{"/ip4/127.0.0.1/tcp/0"}
		cfg.ShutdownTimeout = time.Second
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		nd, err := node.New(ctx, cfg)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = nd.Close() })
		agents = append(agents, nd)
	}
	start := time.Now()
	deadline := start.Add(time.Minute)
	for _, nd := range agents {
		for len(nd.Overlay().Neighbours()) < 2 {
			if time.Now().After(deadline) {
				t.Fatalf("agent %s has %d neighbours after a minute of mDNS", nd.ID(), len(nd.Overlay().Neighbours()))
			}
			time.Sleep(50 * time.Millisecond) // polling interval
		}
	}
	t.Logf("3 agents with no bootstrap, each with 2 neighbours by mDNS after %v", time.Since(start).Round(time.Millisecond))
}
