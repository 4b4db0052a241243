package node

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/zorilla-p2p/zorilla/overlay"
)

func TestBootStep(t *testing.T) {
	refused := errors.New("failed to dial 12D3KooW: all dials failed\n  * [/ip4/127.0.0.1/tcp/1] dial tcp4 127.0.0.1:1: connect: connection refused")
	for _, tc := range []struct {
		name                string
		wasReached, reached bool
		delay               time.Duration
		why                 error
		wantMsg             string
		wantNext            time.Duration
	}{
		{"start-up failed", true, false, 0, refused,
			"no bootstrap peer can be reached ([/ip4/127.0.0.1/tcp/1] dial tcp4 127.0.0.1:1: connect: connection refused); retrying with backoff up to 1m0s", time.Second},
		{"still unreachable: quiet, backoff doubles", false, false, time.Second, refused, "", 2 * time.Second},
		{"backoff stops at its cap", false, false, 40 * time.Second, refused, "", time.Minute},
		{"reached again", false, true, 8 * time.Second, nil, "reached the network: a bootstrap peer answered", time.Minute},
		{"still reached: quiet", true, true, time.Minute, nil, "", time.Minute},
		{"lost", true, false, time.Minute, nil, "no bootstrap peer can be reached (no answer); retrying with backoff up to 1m0s", time.Minute},
	} {
		msg, next := bootStep(tc.wasReached, tc.reached, tc.delay, tc.why)
		if msg != tc.wantMsg || next != tc.wantNext {
			t.Errorf("%s: %q, next in %v; want %q, next in %v", tc.name, msg, next, tc.wantMsg, tc.wantNext)
		}
	}
	long := errors.New(strings.Repeat("x", 1000))
	if msg, _ := bootStep(true, false, 0, long); len(msg) > bootMessageMax+100 || strings.Contains(msg, "\n") {
		t.Errorf("a long reason is not cut to one short line: %d bytes", len(msg))
	}
}

// An agent whose bootstrap peer is down says so once, keeps trying, and
// says when the peer is back (the same identity on the same port).
func TestBootstrapReportsUnreachableThenReached(t *testing.T) {
	key, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	cfgB := testConfig("")
	cfgB.Listen = cfgB.Listen[:1] // TCP only: the port is taken again below
	b := startNode(t, cfgB, WithIdentity(key))
	addr := b.Addrs()[0]
	port, err := addr.ValueForProtocol(ma.P_TCP)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	reports := make(chan string, 16)
	cfgA := testConfig("")
	cfgA.Bootstrap = []string{addr.String()}
	startNode(t, cfgA, WithReport(func(msg string) { reports <- msg }))
	want := func(prefix string) {
		t.Helper()
		select {
		case msg := <-reports:
			if !strings.HasPrefix(msg, prefix) {
				t.Fatalf("report %q, want %q...", msg, prefix)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("no report %q within 30s", prefix)
		}
	}
	want("no bootstrap peer can be reached (")
	cfgB.Listen = []string{"/ip4/127.0.0.1/tcp/" + port}
	b = startNode(t, cfgB, WithIdentity(key))
	want("reached the network")
	// An agent whose bootstrap peer answers at once reports nothing.
	quiet := make(chan string, 16)
	cfgC := testConfig("")
	cfgC.Bootstrap = []string{b.Addrs()[0].String()}
	c := startNode(t, cfgC, WithReport(func(msg string) { quiet <- msg }))
	deadline := time.Now().Add(30 * time.Second)
	for !slices.ContainsFunc(c.Overlay().Peers(), func(p overlay.PeerInfo) bool { return p.ID == b.ID() && !p.Dead }) {
		if time.Now().After(deadline) {
			t.Fatal("the third agent never listed its bootstrap peer")
		}
		time.Sleep(20 * time.Millisecond) // polling interval
	}
	for _, ch := range []chan string{reports, quiet} {
		select {
		case msg := <-ch:
			t.Errorf("a report while nothing changed: %q", msg)
		default:
		}
	}
}

func TestPortProbes(t *testing.T) {
	got, err := portProbes([]string{"/ip4/0.0.0.0/tcp/4001", "/ip4/0.0.0.0/udp/4001/quic-v1", "/ip6/::1/tcp/0",
		"/ip4/127.0.0.1/tcp/4002/ws", "/p2p-circuit", "/unix/tmp/x.sock"})
	if err != nil {
		t.Fatal(err)
	}
	want := []portProbe{{"tcp", "0.0.0.0:4001"}, {"udp", "0.0.0.0:4001"}, {"tcp", "127.0.0.1:4002"}}
	if !slices.Equal(got, want) {
		t.Errorf("probes %v, want %v", got, want)
	}
	if _, err := portProbes([]string{"/ip4/1.2.3/tcp/1"}); err == nil {
		t.Error("a bad listen address gave no error")
	}
}

// A second agent on the TCP port of a first one (which libp2p binds with
// SO_REUSEPORT, so the second would start) is refused with ErrPortInUse,
// as is a port any other program holds, unless ReusePort.
func TestNewRefusesPortInUse(t *testing.T) {
	cfg := testConfig("")
	cfg.Listen = cfg.Listen[:1]
	first := startNode(t, cfg)
	port, err := first.Addrs()[0].ValueForProtocol(ma.P_TCP)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, other, _ := net.SplitHostPort(ln.Addr().String())
	for _, p := range []string{port, other} {
		cfg.Listen = []string{"/ip4/127.0.0.1/tcp/" + p}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		n, err := New(ctx, cfg)
		cancel()
		if err == nil {
			n.Close()
			t.Fatalf("a second listener on port %s started", p)
		}
		if !errors.Is(err, ErrPortInUse) || !strings.Contains(err.Error(), "tcp port "+p+" is already in use") {
			t.Errorf("port %s: %v; want ErrPortInUse naming the port", p, err)
		}
	}
	cfg.Listen, cfg.ReusePort = []string{"/ip4/127.0.0.1/tcp/" + port}, true
	second := startNode(t, cfg)
	if !slices.ContainsFunc(second.Addrs(), func(a ma.Multiaddr) bool { return strings.Contains(a.String(), "/tcp/"+port+"/") }) {
		t.Errorf("with ReusePort the agent listens on %v, want port %s", second.Addrs(), port)
	}
}
