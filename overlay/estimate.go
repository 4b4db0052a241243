package overlay

// maxEstimate bounds a size estimate: the DHT's comes from a fit of
// distances, which a handful of odd samples can send anywhere.
const maxEstimate = 1 << 30

// Estimate is how many agents the network has, this one included, as far
// as this agent can tell: the private DHT's estimate (from the distances
// of the closest peers its lookups meet: kad-dht's estimator), or the
// peers the overlay knows plus one if that is more. settled reports
// whether the DHT's estimate was there: it needs a few lookups (the random
// walks of the first minutes) in a network of more than a DHT bucket (20
// agents).
func (o *Overlay) Estimate() (n int, settled bool) {
	d, err := o.dht.NetworkSize()
	return estimate(int64(d), err == nil, len(o.view.Load().peers))
}

// estimate combines the DHT's estimate (if ok) with the count of known
// peers; a DHT estimate that is not a size at all is ignored.
func estimate(dhtSize int64, ok bool, known int) (int, bool) {
	n := known + 1
	if !ok || dhtSize < 1 || dhtSize > maxEstimate {
		return n, false
	}
	return max(n, int(dhtSize)), true
}
