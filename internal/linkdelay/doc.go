// Package linkdelay delays what an agent sends over TCP, by the subnet of
// the peer it sends to: the latency shaper of testnets whose kernel has no
// netem qdisc. It is enabled only through node.Config's
// TestnetDelay (the agent's hidden --testnet-delay flag); an agent without
// it never goes through this package.
//
// A Table maps destination subnets to a one-way delay ("10.90.1.0/24=5ms";
// the longest matching prefix wins). Upgrader wraps libp2p's connection
// upgrader: every raw TCP connection, dialled or accepted, whose remote
// address has a delay becomes a Conn before the security handshake, so
// everything above it (noise, yamux, every stream, libp2p ping) sees the
// delay. Only writes are delayed: each agent delays what it sends, so the
// RTT between two agents is the sum of their delays towards each other.
//
// A Conn's writes go through a Line: each written chunk is stamped with the
// time it may leave, and one goroutine per connection writes the chunks to
// the real connection in order when their time comes. The line holds at
// most Limit bytes (a TCP send buffer's worth), so a fast writer blocks
// rather than growing memory, and a connection's throughput is at most
// Limit per delay, like a real long link with default buffers. Close goes
// through the line: what was written before it leaves first. The goroutine
// ends with Close.
package linkdelay
