// Package proto is the vocabulary a job's submitter and its hosts share:
// the job ID, what an advert asks for (Need), and the messages of the
// protocols between a submitter and its workers (offer, lease, report,
// decline, preempt, fetch, checkpoint copies), each under a versioned
// protocol ID with a size limit on every read. It also holds the one rank
// table (RankTable) that says where every copy of every rank runs: the
// submitter builds it from its plan, the commit carries it, and the
// worker and the MPI router check and read it.
//
// Both sides import this package; it imports neither. Message fields are
// only ever added, never renumbered or reused, and every decoder of bytes
// from a peer bounds sizes and counts.
package proto
