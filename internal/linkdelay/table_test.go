package linkdelay

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestParseRule(t *testing.T) {
	for in, want := range map[string]string{
		"10.90.1.0/24=5ms":        "10.90.1.0/24=5ms",
		" 10.90.1.7/24 = 10.5ms ": "10.90.1.0/24=10.5ms",
		"127.0.0.2/32=20ms":       "127.0.0.2/32=20ms",
		"fd00::/8=1ms":            "fd00::/8=1ms",
		"10.0.0.0/8=0s":           "10.0.0.0/8=0s",
		"10.0.0.0/8=5s":           "10.0.0.0/8=5s",
	} {
		r, err := ParseRule(in)
		if err != nil || r.String() != want {
			t.Errorf("%q: %v, %v; want %s", in, r, err, want)
		}
	}
	for in, want := range map[string]string{
		"10.90.1.0/24":        "want SUBNET=DELAY",
		"10.90.1.0/33=5ms":    "subnet: want a CIDR prefix",
		"10.90.1.0=5ms":       "subnet: want a CIDR prefix",
		"nancy=5ms":           "subnet: want a CIDR prefix",
		"10.90.1.0/24=5":      "delay: want a duration",
		"10.90.1.0/24=":       "delay: want a duration",
		"10.90.1.0/24=-1ms":   "out of [0, 5s]",
		"10.90.1.0/24=1h":     "out of [0, 5s]",
		"10.90.1.0/24=5.001s": "out of [0, 5s]",
	} {
		_, err := ParseRule(in)
		if !errors.Is(err, ErrRule) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want ErrRule saying %q", in, err, want)
		}
	}
}

func TestTableLongestSubnetWins(t *testing.T) {
	tab, err := ParseTable([]string{"10.0.0.0/8=30ms", "10.90.1.0/24=5ms", "10.90.1.2/32=0s", "::ffff:0:0/96=1ms"})
	if err != nil {
		t.Fatal(err)
	}
	for addr, want := range map[string]time.Duration{
		"10.90.1.9":           5 * time.Millisecond,
		"10.90.1.2":           0, // an exemption inside the /24
		"10.90.2.9":           30 * time.Millisecond,
		"10.1.2.3":            30 * time.Millisecond,
		"::ffff:10.90.1.9":    5 * time.Millisecond, // IPv4-mapped
		"192.168.1.1":         0,
		"127.0.0.1":           0,
		"fd00::1":             0,
		"2001:db8::ffff:1:22": 0,
	} {
		if got := tab.DelayTo(netip.MustParseAddr(addr)); got != want {
			t.Errorf("DelayTo(%s) = %v, want %v", addr, got, want)
		}
	}
	if r := tab.Rules(); len(r) != 4 || r[0].Subnet.Bits() < r[len(r)-1].Subnet.Bits() {
		t.Errorf("rules not longest first: %v", r)
	}
}

func TestNewTableRefuses(t *testing.T) {
	if _, err := ParseTable([]string{"10.0.0.0/8=1ms", "10.1.0.0/8=2ms"}); err == nil || !strings.Contains(err.Error(), "10.0.0.0/8 given twice") {
		t.Errorf("same subnet twice: %v", err)
	}
	if _, err := NewTable([]Rule{{Delay: time.Millisecond}}); !errors.Is(err, ErrRule) {
		t.Errorf("rule without a subnet: %v", err)
	}
	many := make([]string, MaxRules+1)
	for i := range many {
		many[i] = fmt.Sprintf("10.%d.%d.0/24=1ms", i/256, i%256)
	}
	if _, err := ParseTable(many); err == nil || !strings.Contains(err.Error(), "at most 1024") {
		t.Errorf("%d rules: %v", len(many), err)
	}
	if tab, err := ParseTable(nil); err != nil || tab.DelayTo(netip.MustParseAddr("10.0.0.1")) != 0 {
		t.Errorf("empty table: %v", err)
	}
}
