package job

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/multiformats/go-multiaddr"
)

// ErrPMIReplicas refuses a PMI job with copies: replication needs the
// Zorilla library in every process (its lead copy sends, the others
// log), which an MPICH program does not have.
var ErrPMIReplicas = errors.New("pmi: an MPICH program cannot be replicated (-r 2 needs the Zorilla MPI library in the program); submit it with -r 1")

// ErrPMICheckpoint refuses a PMI job with --checkpoint-every: checkpoints
// are taken by the Zorilla MPI library's Comm.Checkpoint and its markers,
// which an MPICH program does not have.
var ErrPMICheckpoint = errors.New("pmi: an MPICH program cannot take Zorilla checkpoints (--checkpoint-every needs the Zorilla MPI library in the program); submit it without --checkpoint-every")

// checkPMI refuses what a PMI job cannot do.
func (d Description) checkPMI() error {
	switch {
	case d.PMI && d.Replicas > 1:
		return ErrPMIReplicas
	case d.PMI && d.CheckpointEvery > 0:
		return ErrPMICheckpoint
	}
	return nil
}

// PreferDirect moves the offers of hosts known only through a relay
// behind the others, keeping each group's order: MPICH's ranks connect to
// each other directly, which a host behind a NAT that only a relay
// reaches cannot take part in. An offer with no address is not judged.
func PreferDirect(rlist []Offer) {
	sort.SliceStable(rlist, func(i, j int) bool { return !relayOnly(rlist[i]) && relayOnly(rlist[j]) })
}

// relayOnly reports an offer from a host the submitter reached only
// through a relay, or whose every address goes through a relay.
func relayOnly(o Offer) bool {
	if o.Relayed {
		return true
	}
	for _, a := range o.Addrs {
		if _, err := a.ValueForProtocol(multiaddr.P_CIRCUIT); err != nil {
			return false
		}
	}
	return len(o.Addrs) > 0
}

// PlacePMI places an MPICH job (-r 1). MPICH's ranks open TCP connections
// to each other on the hosts' own addresses, so a host known only through
// a relay (behind a NAT) can only run such a job alone. The directly
// reachable offers are placed first; only when they cannot hold the job
// are all offers placed, and a plan that then puts a relay-only host
// beside others is refused (checkPMIPlan), naming the hosts, unless the
// strategy is concentrate and one host can hold the whole job. Offers
// left out go to the plan's Cancel list, as with Place.
func PlacePMI(s Strategy, rlist []Offer, n int) (Plan, error) {
	var direct, behind []Offer
	for _, o := range rlist {
		if relayOnly(o) {
			behind = append(behind, o)
		} else {
			direct = append(direct, o)
		}
	}
	if len(behind) > 0 && len(direct) > 0 {
		if p, err := Place(s, direct, n, 1); err == nil {
			p.Spares = append(p.Spares, behind...)
			return p, nil
		}
	}
	p, err := Place(s, rlist, n, 1)
	if err != nil {
		return Plan{}, err
	}
	if err := checkPMIPlan(p, direct, n); err != nil {
		// Concentrate asked for few hosts: one host that holds the whole
		// job (the closest, directly reachable ones first) needs no
		// connection between hosts.
		if s == Concentrate {
			for _, o := range append(direct, behind...) {
				if Capacity(o, n) < n {
					continue
				}
				alone, err := Place(s, []Offer{o}, n, 1)
				if err != nil {
					continue
				}
				for _, other := range rlist {
					if other.Peer != o.Peer {
						alone.Spares = append(alone.Spares, other)
					}
				}
				return alone, nil
			}
		}
		return Plan{}, err
	}
	return p, nil
}

// checkPMIPlan refuses a placement that cannot work for an MPICH job: on
// more than one host, a host known only through relays cannot take the
// direct TCP connections of the others' ranks (and two such hosts, each
// behind its own NAT, cannot even reach each other), whatever the agents
// do. direct are the offers of directly reachable hosts, for the message.
func checkPMIPlan(plan Plan, direct []Offer, n int) error {
	if len(plan.Hosts) < 2 {
		return nil
	}
	var behind []string
	for _, h := range plan.Hosts {
		if relayOnly(h.Offer) {
			behind = append(behind, ShortPeer(h.Offer.Peer))
		}
	}
	if len(behind) == 0 {
		return nil
	}
	slots := 0
	for _, o := range direct {
		slots += Capacity(o, n)
	}
	what := "host " + behind[0] + " is reachable only through relays (behind a NAT)"
	if len(behind) > 1 {
		what = "hosts " + strings.Join(behind, ", ") + " are reachable only through relays (behind NATs)"
	}
	return fmt.Errorf("%w: pmi: %s, and MPICH's ranks open TCP connections to each other directly, "+
		"which cannot reach a host behind a NAT; the directly reachable hosts offered %d of the %d slots the job needs: "+
		"add agents others can reach directly, or keep the job on one host (-a concentrate)", ErrInfeasible, what, slots, n)
}
