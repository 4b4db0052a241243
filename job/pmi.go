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

// preferDirect moves the offers of hosts known only through a relay
// behind the others, keeping each group's order: MPICH's ranks connect to
// each other directly, which a host behind a NAT that only a relay
// reaches cannot take part in. An offer with no address is not judged.
func preferDirect(rlist []Offer) {
	sort.SliceStable(rlist, func(i, j int) bool { return !relayOnly(rlist[i]) && relayOnly(rlist[j]) })
}

// relayOnly reports an offer whose every address goes through a relay.
func relayOnly(o Offer) bool {
	for _, a := range o.Addrs {
		if _, err := a.ValueForProtocol(multiaddr.P_CIRCUIT); err != nil {
			return false
		}
	}
	return len(o.Addrs) > 0
}

// checkPMIPlan refuses a placement that cannot work for an MPICH job: on
// more than one host, two hosts known only through relays (each behind its
// own NAT) cannot open MPICH's direct connections to each other, whatever
// the agents do. One such host among directly reachable ones is left to
// the hosts' own check at start (it can dial out to them).
func checkPMIPlan(plan Plan) error {
	if len(plan.Hosts) < 2 {
		return nil
	}
	var behind []string
	for _, h := range plan.Hosts {
		if relayOnly(h.Offer) {
			behind = append(behind, shortPeer(h.Offer.Peer))
		}
	}
	if len(behind) < 2 {
		return nil
	}
	return fmt.Errorf("pmi: hosts %s are reachable only through relays (behind NATs), and MPICH's ranks connect to each other directly: "+
		"this placement cannot work; add agents others can reach directly, or keep the job on one host (-a concentrate)", strings.Join(behind, ", "))
}
