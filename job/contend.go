package job

import "time"

// Priority is a job's place in the line for contested hosts: when it
// started waiting (its submission, carried in its advert as the time the
// advert was issued) and its ID to break ties. Every agent orders jobs
// by it the same way, so two jobs that each hold part of what they need
// never both wait for the other: the later one gives the contested hosts
// back (DeclineYield) and the earlier one is offered them first.
type Priority struct {
	Since time.Time
	Job   ID
}

// Precedes reports whether a comes before b: the earlier submission, then
// the smaller job ID. It is a strict total order on distinct jobs, so it
// never lets both of two jobs (nor neither) go first.
func Precedes(a, b Priority) bool {
	if !a.Since.Equal(b.Since) {
		return a.Since.Before(b.Since)
	}
	return a.Job < b.Job
}

// ShouldYield is a reserving job's answer to a worker saying that an
// earlier job wants the slots this job holds there: give them back, unless
// the job can already be placed (it is about to commit or cancel, which
// frees them as soon). It is the whole of the rule a submitter applies;
// the worker applies Precedes before asking.
func ShouldYield(feasible bool) bool { return !feasible }
