// Package bench measures Zorilla's ping-pong against its baselines on this
// machine, for `zorilla bench pingpong`: two ranks of examples/pingpong on
// two agent processes of a localnet, against the same ping-pong over a raw
// libp2p stream to an echo process, over a relay chain (the floor of any
// design where agents relay over unix sockets), over an shm relay chain
// (the same with shared-memory rings between each rank and its relay), and
// against NetPIPE over TCP, Open MPI and
// MPICH where installed. Run measures every configuration once per round,
// back to back, and WriteTable prints the medians and the per-round ratios.
//
// The echo and the relays are child processes of the zorilla binary
// (Config.Binary), which must have the hidden commands `bench echo` and
// `bench relay` that call ServeEcho, ServeEchoUnix, NearRelay and
// FarRelay.
package bench
