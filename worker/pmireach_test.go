package worker

import (
	"slices"
	"testing"
)

func TestNetDevices(t *testing.T) {
	cases := []struct {
		perHost [][]string
		want    []string
	}{
		{nil, []string{"lo"}},                                      // one host: this machine
		{[][]string{{}, {}}, []string{"lo"}},                       // every host over loopback: this machine
		{[][]string{{"eth1"}, {"eth1"}}, []string{"eth1"}},         // one network
		{[][]string{{"eth0", "eth1"}, {"eth1"}}, []string{"eth1"}}, // the site peer over both, the other site over the wan
		{[][]string{{"eth0"}, {"eth1"}}, []string{"eth0", "eth1"}}, // nothing in common: all
		{[][]string{{}, {"eth2"}}, []string{"eth2"}},               // one host here, one over eth2
	}
	for _, c := range cases {
		if got := netDevices(c.perHost, "lo"); !slices.Equal(got, c.want) {
			t.Errorf("netDevices(%v) = %v, want %v", c.perHost, got, c.want)
		}
	}
}

// Without a loopback interface to name, a job on this machine alone is
// left to MPICH's own choice, as before.
func TestNetDevicesNoLoopback(t *testing.T) {
	if got := netDevices([][]string{{}, {}}, ""); got != nil {
		t.Errorf("got %v, want nil", got)
	}
}

func TestPMINetEnv(t *testing.T) {
	if got := pmiNetEnv(nil, nil); got != nil {
		t.Errorf("no devices: %v", got)
	}
	got := pmiNetEnv([]string{"FOO=1"}, []string{"eth0", "eth1"})
	if want := []string{"UCX_NET_DEVICES=eth0,eth1", "FI_TCP_IFACE=eth0"}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	got = pmiNetEnv([]string{"UCX_NET_DEVICES=ib0"}, []string{"eth0"})
	if want := []string{"FI_TCP_IFACE=eth0"}; !slices.Equal(got, want) {
		t.Errorf("the job's own choice: got %v, want %v", got, want)
	}
}
