package worker

import (
	"testing"

	"github.com/zorilla-p2p/zorilla/job/proto"
)

// TestDecideIsolatedNetwork: a host whose jobs see only loopback declines
// at the advert an MPICH job whose ranks would be on other hosts too, with
// its own code, and takes one it could hold alone.
func TestDecideIsolatedNetwork(t *testing.T) {
	pmi := func(n int, spread bool) proto.Need {
		nd := need(n, proto.Requirements{})
		nd.PMI, nd.Spread = true, spread
		return nd
	}
	for _, tc := range []struct {
		name     string
		isolates bool
		need     proto.Need
		u        Usage
		slots    int // 0: declined for the network
	}{
		{"spread over hosts", true, pmi(4, true), Usage{}, 0},
		{"spread of two", true, pmi(2, true), Usage{}, 0},
		{"concentrate, more than this host lends", true, pmi(5, false), Usage{}, 0},
		{"concentrate, fits here", true, pmi(4, false), Usage{}, 4},
		{"one rank, spread or not", true, pmi(1, true), Usage{}, 1},
		{"not an MPICH job", true, need(4, proto.Requirements{}), Usage{}, 4},
		{"host network", false, pmi(4, true), Usage{}, 4},
		// Never runnable here: said as such, not as busy.
		{"busy host", true, pmi(4, true), Usage{Jobs: 2, Cores: 4}, 0},
	} {
		p := host()
		p.IsolatesNetwork = tc.isolates
		d := Decide(p, tc.u, "alice", tc.need)
		if tc.slots > 0 {
			if !d.Accept || d.Slots != tc.slots {
				t.Errorf("%s: %+v, want an offer of %d slots", tc.name, d, tc.slots)
			}
			continue
		}
		if d.Accept || d.Full || d.Code != proto.DeclineNetwork || d.Detail != "job-network=isolated" {
			t.Errorf("%s: %+v, want a lasting decline for the network", tc.name, d)
		}
		if err := (proto.DeclineMsg{Job: proto.NewJobID(), Code: d.Code, Detail: d.Detail}).Validate(); err != nil {
			t.Errorf("%s: the decline does not pass the wire's check: %v", tc.name, err)
		}
	}
}
