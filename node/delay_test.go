package node

import (
	"context"
	"crypto/rand"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/protocol/ping"
)

func TestTestnetDelayConfig(t *testing.T) {
	tcpOnly := []string{"/ip4/0.0.0.0/tcp/4001"}
	for _, tc := range []struct {
		name   string
		listen []string
		delay  []string
		want   string // in the message; "" for valid
	}{
		{"off", nil, nil, ""},
		{"two sites", tcpOnly, []string{"172.30.1.0/24=5ms", "172.30.2.0/24=10.5ms"}, ""},
		{"zero and longest subnet", tcpOnly, []string{"10.0.0.0/8=5ms", "10.1.0.0/16=0s"}, ""},
		{"bad subnet", tcpOnly, []string{"172.30.1.0/40=5ms"}, `testnet delay: linkdelay: bad delay rule "172.30.1.0/40=5ms": subnet`},
		{"no subnet", tcpOnly, []string{"5ms"}, "want SUBNET=DELAY"},
		{"no unit", tcpOnly, []string{"172.30.1.0/24=5"}, "delay: want a duration such as 5ms"},
		{"negative", tcpOnly, []string{"172.30.1.0/24=-5ms"}, "delay -5ms out of [0, 5s]"},
		{"huge", tcpOnly, []string{"172.30.1.0/24=1m"}, "delay 1m0s out of [0, 5s]"},
		{"twice", tcpOnly, []string{"172.30.1.0/24=1ms", "172.30.1.9/24=2ms"}, "given twice"},
		{"quic", nil, []string{"172.30.1.0/24=5ms"}, `listen on TCP only, not on "/ip4/0.0.0.0/udp/4001/quic-v1"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			if tc.listen != nil {
				c.Listen = tc.listen
			}
			c.TestnetDelay = tc.delay
			err := c.validate()
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrInvalidConfig mentioning %q", err, tc.want)
			}
		})
	}
}

// delayHost is a real agent host listening on TCP at ip, delaying what it
// sends by rules.
func delayHost(t *testing.T, ip string, rules ...string) host.Host {
	t.Helper()
	key, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	c := DefaultConfig()
	c.Listen = []string{"/ip4/" + ip + "/tcp/0"}
	c.TestnetDelay = rules
	if err := c.validate(); err != nil {
		t.Fatal(err)
	}
	h, err := newHost(c, key, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Error(err)
		}
	})
	return h
}

// pings connects a to b and returns n RTTs of libp2p ping from a.
func pings(t *testing.T, a, b host.Host, n int) []time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := a.Connect(ctx, peer.AddrInfo{ID: b.ID(), Addrs: b.Addrs()}); err != nil {
		t.Fatal(err)
	}
	var rtts []time.Duration
	for r := range ping.Ping(ctx, a, b.ID()) {
		if r.Error != nil {
			t.Fatal(r.Error)
		}
		if rtts = append(rtts, r.RTT); len(rtts) == n {
			break
		}
	}
	return rtts
}

// checkRTTs checks every sample is at least floor (the delay cannot be
// skipped) and the smallest is within slack of it (nothing else slows
// the loopback that much).
func checkRTTs(t *testing.T, what string, rtts []time.Duration, floor, slack time.Duration) {
	t.Helper()
	least := rtts[0]
	for _, r := range rtts {
		if r < floor {
			t.Errorf("%s: RTT %v below the %v injected (all: %v)", what, r, floor, rtts)
		}
		least = min(least, r)
	}
	if least > floor+slack {
		t.Errorf("%s: smallest RTT %v, want at most %v (all: %v)", what, least, floor+slack, rtts)
	}
	t.Logf("%s: %v", what, rtts)
}

// Four real hosts on loopback addresses in different /32 subnets: libp2p
// ping sees the delay each side puts on what it sends, on dialled and on
// accepted connections, and only towards the subnets in its table.
func TestTestnetDelayPing(t *testing.T) {
	const slack = 25 * time.Millisecond // loose: a loaded machine
	a := delayHost(t, "127.0.0.1", "127.0.0.2/32=20ms")
	b := delayHost(t, "127.0.0.2", "127.0.0.1/32=10ms")
	d := delayHost(t, "127.0.0.2") // no delay of its own
	c := delayHost(t, "127.0.0.3") // a subnet a does not delay

	checkRTTs(t, "a dials b, a pings", pings(t, a, b, 5), 30*time.Millisecond, slack)
	checkRTTs(t, "b pings a on a's connection", pings(t, b, a, 5), 30*time.Millisecond, slack)
	checkRTTs(t, "d dials a (a accepted), d pings", pings(t, d, a, 5), 20*time.Millisecond, slack)
	checkRTTs(t, "c dials a, undelayed", pings(t, c, a, 5), 0, 15*time.Millisecond)
	for _, conn := range a.Network().ConnsToPeer(d.ID()) {
		if !strings.HasPrefix(conn.RemoteMultiaddr().String(), "/ip4/127.0.0.2/tcp/") {
			t.Errorf("a sees d at %s, want its listen address 127.0.0.2 (reuseport)", conn.RemoteMultiaddr())
		}
	}
}
