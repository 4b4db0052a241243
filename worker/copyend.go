package worker

import (
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/mpi/router"
	"github.com/zorilla-p2p/zorilla/worker/proc"
)

// copyEnd is what the worker does when a copy of a rank ends, in order:
// tell the submitter what the sandbox did to it, fail the job's MPI
// routes here, tell the submitter that the start cannot complete. Each
// is done when set.
type copyEnd struct {
	Words       *proto.Report
	Fail        error
	FailedStart *proto.Report
}

// decideCopyEnd decides on the end x of copy p of a job of replicas copies
// per rank, whose ranks here were released or not, in a sandbox of res.
// A copy of a replicated rank killed by a signal is the router's to
// judge: the job fails only when the rank has no copy left. A non-zero
// status is the program's answer. Pure.
func decideCopyEnd(p proto.Proc, x proc.Exit, res proc.Resources, replicas int, released bool) copyEnd {
	var end copyEnd
	why := sandboxWords(x, res)
	if why != "" {
		end.Words = &proto.Report{Kind: proto.RepOutput, Rank: p.Rank, Replica: p.Replica, Stream: proc.Stderr,
			Data: []byte(fmt.Sprintf("zorilla: rank %d copy %d %s", p.Rank, p.Replica, why))}
	}
	killedCopy := x.Signal != "" && replicas > 1 && !x.TimedOut
	if (x.Code != 0 || x.Signal != "") && !killedCopy {
		end.Fail = fmt.Errorf("rank %d exited with %d%s", p.Rank, x.Code, suffix(why))
	}
	if killedCopy && !released {
		// A replicated start cannot complete without this copy (its rank
		// never reaches Init here): say so now rather than let the
		// submitter wait for its Init timeout.
		end.FailedStart = &proto.Report{Kind: proto.RepFailed,
			Reason: fmt.Sprintf("rank %d copy %d ended during the start (%s)", p.Rank, p.Replica, x)}
	}
	return end
}

// mpiFailed is what exitReports reads of why the job's MPI failed here.
type mpiFailed struct {
	Failed bool
	Left   bool    // this host left the job, the others carry on (router.Failure.Left)
	Peer   peer.ID // the host whose loss failed it, if any (router.Failure.Peer)
}

// failedOf is f as exitReports reads it; f nil: the MPI did not fail.
func failedOf(f *router.Failure) mpiFailed {
	if f == nil {
		return mpiFailed{}
	}
	return mpiFailed{Failed: true, Left: f.Left(), Peer: f.Peer}
}

// exitReports are the last reports of copy p, which ended with x while
// the job's MPI here failed as f says: its exit, after the host whose
// loss failed the rank, if any (followMPI may not have said it yet, and
// the exit alone would read as the program's own failure). A copy of a
// host the job's other hosts counted lost and carried on without is a
// lost copy, whatever status it ended with. Pure.
func exitReports(p proto.Proc, x proc.Exit, f mpiFailed) []proto.Report {
	exit := proto.Report{Kind: proto.RepExit, Rank: p.Rank, Replica: p.Replica, Code: x.Code, Signal: x.Signal, TimedOut: x.TimedOut}
	if !f.Failed || x.Code == 0 && x.Signal == "" {
		return []proto.Report{exit}
	}
	if f.Left {
		exit.Lost = "its host was counted lost by the job's other hosts, which carried on"
	}
	if f.Peer != "" {
		return []proto.Report{{Kind: proto.RepPeerLost, Peer: f.Peer}, exit}
	}
	return []proto.Report{exit}
}
