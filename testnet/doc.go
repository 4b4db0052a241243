// Package testnet starts many agents at once: in one process on real loopback
// TCP or on go-libp2p's mocknet with per-link latency (sites with RTTs), as
// local processes (zorilla demo), and as containers.
package testnet
