package job

// Enough reports whether a submitter holding the latency-sorted rlist may
// stop flooding. Concentrate needs only the capacity: the job is Feasible.
// Spread maps one process per host first, so it also wants a host for every
// process (n×r offers, P2P-MPI's booking of n×r hosts); when the network has
// fewer hosts the flood runs out, and the job is placed with what it has.
func Enough(s Strategy, rlist []Offer, n, r int) bool {
	slist, _ := SelectHosts(rlist, n, r)
	if Feasible(slist, n, r) != nil {
		return false
	}
	return s != Spread || len(rlist) >= n*r
}
