// Package mpi is the message-passing library that user programs import.
//
// A rank process never opens a network connection: Init connects to the local
// agent over the unix socket named by ZORILLA_SOCKET and authenticates with
// the job key, rank and replica index from the environment. The agent routes
// every message. This package must not import libp2p, so that user binaries
// stay small and the process-agent wire (PROTOCOL.md) stays language-neutral.
package mpi
