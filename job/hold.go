package job

import "github.com/zorilla-p2p/zorilla/job/proto"

// What a job collecting offers may hold, and when it stops: the pure rules
// the reservation loop applies.

// MaxHeld bounds the offers a job holds while it collects them: P2P-MPI's
// overbooking of n x r hosts (a placement never uses more), plus the
// spares kept for a host that fails its commit. A closer offer that comes
// later replaces the farthest one held.
func MaxHeld(n, r, spares int) int { return n*r + spares }

// transient reports whether a decline may go away if the job waits: the
// agent is busy, has no free slot or memory now, or is stopping, or the
// job gave its offer there back to an earlier job (DeclineYield: the agent
// offers again when it can). A policy refusal or a requirement the agent
// does not have never does.
func transient(c proto.DeclineCode) bool {
	switch c {
	case proto.DeclineBusy, proto.DeclineSlots, proto.DeclineMemory, proto.DeclineDraining, proto.DeclineYield:
		return true
	}
	return false
}

// Hopeless reports whether waiting cannot make a job placeable: a whole
// radius brought no new answer (the flood reached every agent it can),
// the offers in hand cannot hold the job, and no agent declined for a
// reason that passes. Such a job fails at once instead of holding its
// offers until its deadline.
func Hopeless(quiet, feasible bool, declined []DeclineCount) bool {
	if !quiet || feasible {
		return false
	}
	for _, c := range declined {
		if transient(c.Code) {
			return false
		}
	}
	return true
}
