package docker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/internal/linkdelay"
)

func TestPickShaper(t *testing.T) {
	for _, tc := range []struct {
		want        string
		netem, quic bool
		got         string
	}{
		{ShaperAuto, true, false, ShaperNetem},
		{ShaperAuto, true, true, ShaperNetem},
		{ShaperAuto, false, false, ShaperTransport},
		{ShaperAuto, false, true, ShaperNFQueue}, // the transport delay leaves QUIC alone
		{ShaperNetem, true, false, ShaperNetem},
		{ShaperNetem, false, false, ""},
		{ShaperTransport, true, false, ShaperTransport},
		{ShaperNFQueue, true, true, ShaperNFQueue},
		{ShaperNone, true, false, ShaperNone},
	} {
		if got := pickShaper(tc.want, tc.netem, tc.quic); got != tc.got {
			t.Errorf("pickShaper(%s, netem %v, quic %v) = %q, want %q", tc.want, tc.netem, tc.quic, got, tc.got)
		}
	}
}

func TestChooseShaperWithoutProbing(t *testing.T) {
	ctx := context.Background()
	two := Layout{Sites: []Site{{}, {}}}
	if s, err := chooseShaper(ctx, ShaperTransport, two, 0, false); err != nil || s != ShaperTransport {
		t.Errorf("transport: %q, %v", s, err)
	}
	if s, err := chooseShaper(ctx, ShaperTransport, Layout{Sites: []Site{{}}}, 0, false); err != nil || s != ShaperNone {
		t.Errorf("one site, no local RTT: %q, %v", s, err)
	}
}

// With the transport shaper each agent gets a --testnet-delay that the
// agent accepts, with half the RTT to each site on both of its subnets,
// so that two agents' delays add up to the layout's RTT.
func TestTransportShaperAgentArgs(t *testing.T) {
	l := threeSites(t)
	a := addrPlanAt(90)
	tn := &Testnet{st: State{Layout: l, Addrs: a, LocalRTT: time.Millisecond, Shaper: ShaperTransport}}
	c := Container{Site: 1, SiteName: "lyon", Cores: 2}
	args := tn.agentArgs(c)
	if len(args) < 2 || args[len(args)-2] != "--testnet-delay" {
		t.Fatalf("args %q: no --testnet-delay", args)
	}
	const want = "10.90.0.0/24=5ms,10.91.0.0/24=5ms,10.90.1.0/24=500µs,10.91.1.0/24=500µs,10.90.2.0/24=10ms,10.91.2.0/24=10ms"
	if got := args[len(args)-1]; got != want {
		t.Fatalf("--testnet-delay %s\nwant             %s", got, want)
	}
	table, err := linkdelay.ParseTable(strings.Split(want, ","))
	if err != nil {
		t.Fatal(err)
	}
	lyon0, rennes0 := hostAddr(a.WANSubnet(1), 0), hostAddr(a.WANSubnet(2), 3)
	// rennes delays its way back to lyon by the same half.
	back := delayRules(l, a, 2, time.Millisecond)[1].Delay
	if rtt := table.DelayTo(rennes0) + back; rtt != l.RTT(1, 2, time.Millisecond) {
		t.Errorf("lyon-rennes: delays add up to %v, layout says %v", rtt, l.RTT(1, 2, time.Millisecond))
	}
	if d := table.DelayTo(lyon0); d != 500*time.Microsecond {
		t.Errorf("inside lyon: %v", d)
	}
	tn.st.Shaper = ShaperNFQueue
	if got := strings.Join(tn.agentArgs(c), " "); strings.Contains(got, "testnet-delay") {
		t.Errorf("nfqueue shaper: %s", got)
	}
	tn.st.Shaper, tn.st.LocalRTT, tn.st.Layout = ShaperTransport, 0, Layout{Sites: l.Sites[:1]}
	if got := strings.Join(tn.agentArgs(Container{SiteName: "nancy", Cores: 4}), " "); strings.Contains(got, "testnet-delay") {
		t.Errorf("nothing to delay: %s", got)
	}
}

func TestConfigTransportShaper(t *testing.T) {
	c := DefaultConfig()
	c.Dir, c.Shaper = "/tmp/zt", ShaperTransport
	if err := c.validate(); err != nil {
		t.Fatal(err)
	}
	c.QUIC = true
	if err := c.validate(); err == nil || !strings.Contains(err.Error(), "transport shaper delays TCP only") {
		t.Fatalf("transport with QUIC: %v", err)
	}
	c.Shaper = "tc"
	if err := c.validate(); err == nil || !strings.Contains(err.Error(), "want auto, netem, transport, nfqueue or none") {
		t.Fatalf("unknown shaper: %v", err)
	}
}
