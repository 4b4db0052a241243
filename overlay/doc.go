// Package overlay owns membership: a private Kademlia DHT (own protocol
// prefix, every agent a server, no supernode) to find peers, application-level
// RTT measurement of the peers it knows, and the locality-aware neighbour set
// that floods travel on: the k peers with the lowest RTT plus a few random
// long-range peers that keep the graph connected across sites.
//
// The neighbour choice is a pure function (SelectNeighbours) over measured
// candidates; the Overlay type is the I/O shell that measures and refreshes.
package overlay
