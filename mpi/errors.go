package mpi

import (
	"errors"
	"fmt"

	"github.com/zorilla-p2p/zorilla/mpi/internal/proto"
)

// Errors returned by the library. Calls never panic on bad input: they
// return one of these, wrapped with what failed.
var (
	ErrFinalized = errors.New("mpi: finalized")
	ErrTruncate  = errors.New("mpi: message longer than the receive buffer")
	ErrRefused   = errors.New("mpi: agent refused the connection")
	ErrJobFailed = errors.New("mpi: job failed")
	ErrAgentLost = errors.New("mpi: connection to the agent lost")
	ErrProtocol  = errors.New("mpi: protocol error")
	ErrArg       = errors.New("mpi: invalid argument")
	ErrNotInit   = errors.New("mpi: not initialized")
)

// JobError reports that the job failed: a rank aborted or died, an agent
// running part of the job was lost, or the agent was told to end it. Every
// blocked and later call of every rank returns it. errors.Is(err,
// ErrJobFailed) holds.
type JobError struct {
	Cause  string // "aborted", "rank lost", "agent lost" or "failed"
	Rank   int    // the rank the failure is about, or -1
	Code   int    // the Abort code when Cause is "aborted"
	Reason string // the agent's explanation
}

func (e *JobError) Error() string {
	s := "mpi: job failed"
	if e.Cause != "failed" && e.Cause != "" { // "failed" would say it twice
		s += ": " + e.Cause
	}
	if e.Rank >= 0 {
		s += fmt.Sprintf(" (rank %d", e.Rank)
		if e.Cause == "aborted" {
			s += fmt.Sprintf(", code %d", e.Code)
		}
		s += ")"
	}
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	return s
}

// Is makes errors.Is(err, ErrJobFailed) true.
func (e *JobError) Is(target error) bool { return target == ErrJobFailed }

func jobError(f proto.Fail) *JobError {
	causes := map[uint8]string{
		proto.CauseAborted:   "aborted",
		proto.CauseRankLost:  "rank lost",
		proto.CauseAgentLost: "agent lost",
	}
	c, ok := causes[f.Cause]
	if !ok {
		c = "failed"
	}
	return &JobError{Cause: c, Rank: int(f.Rank), Code: int(f.Code), Reason: f.Reason}
}

func argErr(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrArg, fmt.Sprintf(format, a...))
}
