// Package overlay owns membership: a private Kademlia DHT (one per network
// name, every agent a server, no supernode) to find peers, application-level
// RTT measurement of the peers it knows, and the locality-aware neighbour set
// that floods travel on: the k peers with the lowest RTT plus a few random
// long-range peers that keep the graph connected across sites.
//
// The neighbour choice is a pure function (SelectNeighbours) over measured
// candidates, and so are the exchange's decisions: whom an agent asks
// (ExchangeTarget), what a peer answers (ExchangeAnswer) and which known
// peer a full table forgets (Evict). The Overlay type is the I/O shell
// that measures and refreshes; the simulation (testnet/sim) gossips with
// the same functions.
//
// How the set is kept:
//
//   - Discovery: the DHT routing table, random-walk lookups (a DHT query for
//     a random key), connected peers that speak the overlay protocol, and
//     the neighbour exchange (ExchangeProtocol): every ExchangeInterval an agent
//     asks one of its neighbours, in turn, for the peers it knows. The
//     neighbours of a near peer are likely near, so locality spreads without
//     measuring the whole network.
//   - Measurement: libp2p ping over the host (not ICMP, as in P2P-MPI); each
//     probe takes the smallest of a few pings and feeds an EWMA. At most
//     ProbesPerTick probes start per tick: neighbours often, new peers as
//     they come, the others rarely. The table is bounded (MaxKnown).
//   - Failure: a peer that fails its probes (or that a service reports with
//     MarkDead) is dropped and ignored for DeadFor, unless it connects again.
//     A neighbour whose connection drops is probed at once.
//   - Symmetry: the exchange tells a neighbour "you are one of mine"; it
//     keeps us as an inbound neighbour for InboundLease. Neighbours() is the
//     union, so a flood reaches an agent that nobody picked as one of its
//     nearest.
//
// Everything is scoped by the network name (Config.Network): the DHT
// (/zorilla/net/NAME/kad/1.0.0) and the exchange (ExchangeProtocol), so
// agents of different networks never become neighbours.
//
// Meeting without a known agent: Rendezvous finds a network's agents
// through the public Amino DHT, as a client (provider records under
// RendezvousKey; an agent that cannot be dialled is tried through the
// relays the agent knows), and LAN by multicast DNS (MDNSService). Both
// hand what they find to Bootstrap. The rendezvous asks little of the
// DHT's servers whatever the network's size: an agent looks the key up
// while it lacks live peers (with backoff) and rarely once it has them,
// and only about Providers dialable agents announce themselves. Its
// decisions are plain functions (RendezvousConfig.NextLookup,
// ShouldProvide); Estimate gives them the network's size.
//
// The DHT's own routing table is not the neighbour set: it is XOR-based,
// and kad-dht v0.38.0 ignores its latency-tolerance option.
//
// Neighbour connections are protected in the host's connection manager.
// The Overlay does not own the host: callers close it after the Overlay.
package overlay
