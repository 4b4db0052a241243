// Package testnet starts many agents at once: in one process on real loopback
// TCP or on go-libp2p's mocknet with per-link latency (sites with RTTs), as
// local processes (package localnet: zorilla demo and bench), and as containers.
//
// In one process:
//
//	net, err := testnet.Loopback(ctx, 32, testnet.Options{Seed: 1})
//	net, err := testnet.Mocknet(ctx, testnet.ThreeSites(12), testnet.Options{})
//
// Agents start in waves that double (agent 0, then 1, then 2-3, 4-7, ...),
// each bootstrapped from one agent of an earlier wave. They have no data
// dir unless Options.Configure gives one: an in-memory identity and no API
// socket, so hundreds fit in a process; Node.API serves their routes
// in-process. The overlay config defaults to overlay.ScaledConfig(size).
//
// On mocknet every pair of agents is linked with half the RTT of their
// sites as latency (1ms inside a site by default). Mocknet delivers a
// write of less than 256 bytes followed by a close without its latency:
// protocols measured on it keep a stream open until the answer arrives.
//
// Stop kills an agent (its peers are not told); Restart brings it back with
// the same peer ID. Graph and Graph.StronglyConnected check that floods can
// reach everyone.
package testnet
