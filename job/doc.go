// Package job owns a job from the submitter's side: its description and
// validation, IDs and states, what an advert asks for (Need), the offers that
// come back, reservation, feasibility and placement (P2P-MPI's spread and
// concentrate, rank numbering, replicas on distinct hosts), the two-phase
// start, commit and cancel, retries, and the job records kept on disk.
//
// Placement and feasibility are pure functions over values; the submitter
// session that talks to workers calls them.
package job
