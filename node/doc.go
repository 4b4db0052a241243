// Package node is the Zorilla agent: it loads the agent's Config, keeps its
// Ed25519 identity in the data dir, builds the one libp2p host, wires the
// overlay, flood, worker, job and MPI router services onto it, and serves the
// local control API (HTTP+JSON over a unix socket in the data dir) that the
// zorilla command talks to.
//
// Only node builds a libp2p host. Every other package takes a host.Host (or a
// narrower interface of its own), so tests run whole clusters in one process.
package node
