package main

import (
	"strings"
	"testing"
)

// The hidden --testnet-delay flag: bad input exits 2 with one line that
// says what is wrong, from the flag or from ZORILLA_TESTNET_DELAY.
func TestAgentTestnetDelayBadInput(t *testing.T) {
	dir := shortDataDir(t)
	tcp := []string{"--listen", "/ip4/127.0.0.1/tcp/0"}
	for _, tc := range []struct {
		name string
		env  string
		args []string
		want string
	}{
		{"bad subnet", "", append(tcp, "--testnet-delay", "10.90.1.0/33=5ms"), `bad delay rule "10.90.1.0/33=5ms": subnet`},
		{"no delay", "", append(tcp, "--testnet-delay", "10.90.1.0/24"), "want SUBNET=DELAY"},
		{"negative", "", append(tcp, "--testnet-delay", "10.90.1.0/24=-1ms"), "delay -1ms out of [0, 5s]"},
		{"huge", "", append(tcp, "--testnet-delay", "10.90.1.0/24=10s"), "delay 10s out of [0, 5s]"},
		{"env, one bad", "10.90.1.0/24=5ms, 10.90.2.0/24=fast", tcp, `"10.90.2.0/24=fast": delay: want a duration`},
		{"with QUIC", "", []string{"--listen", "/ip4/127.0.0.1/udp/0/quic-v1", "--testnet-delay", "10.90.1.0/24=5ms"}, "listen on TCP only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv("ZORILLA_TESTNET_DELAY", tc.env)
			}
			r := zorilla(append([]string{"agent", "--data-dir", dir}, tc.args...)...)
			if r.code != 2 || !strings.Contains(r.stderr, tc.want) || strings.Count(r.stderr, "\n") != 1 {
				t.Fatalf("want exit 2 and one line with %q, got %v", tc.want, r)
			}
		})
	}
}

// With the flag the agent runs, TCP only, and says what it delays.
func TestAgentTestnetDelayRuns(t *testing.T) {
	dir := shortDataDir(t)
	info := runAgentInProcess(t, dir, "--testnet-delay", "127.0.0.2/32=5ms,10.90.0.0/16=1ms")
	for _, a := range info.Addrs {
		if !strings.Contains(a, "/tcp/") {
			t.Errorf("agent with a testnet delay listens on %s", a)
		}
	}
}
