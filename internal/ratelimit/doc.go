// Package ratelimit owns the agent's per-peer rate limits and its refusal
// counters. A Peers table holds one token bucket per remote peer, bounded
// in size (full buckets are forgotten first), so that a peer sending more
// than its rate is refused with a map lookup and a little arithmetic,
// before anything it sent is read. Counts counts refusals by reason for
// the agent's stats. The flood limits adverts with it, the rpc endpoint
// limits lease requests, offers and fetches per protocol, and the worker
// limits commits and the offers it makes to one submitter.
package ratelimit
