// Package flood owns the advert protocol (/zorilla/net/NAME/flood/1.0.0): signed job
// adverts flooded over the overlay's neighbours with a radius (TTL), the
// bounded seen-cache, per-neighbour rate limits, and the submitter's
// growing-radius loop (Zorilla's flood scheduling, thread 1).
//
// # Adverts
//
// An Advert names a job, its submitter (peer ID and addresses, so workers
// can answer it directly) and carries an opaque Body: flood does not know
// what a job needs; the job package encodes it (job.EncodeNeed) and the
// worker decodes it. Everything but the TTL is signed by the submitter in a
// libp2p signed envelope (core/record, domain "zorilla-flood-advert") and
// has an expiry; an advert whose signer is not its Submitter is dropped.
//
// # The rules
//
// A peer receiving an advert with TTL t delivers it to its local worker when
// the job is new or t is larger than any TTL seen for it, and forwards it
// with t-1 to every neighbour but the sender only when t-1 > 0 and larger
// than any TTL it already forwarded for the job (decide, a pure function).
// A flood of radius r therefore reaches exactly the peers within r hops, and
// a peer forwards one job at most once per distinct TTL it sees: no storms.
// The submitter delivers its own advert to itself, as an agent is a worker
// too. The memory of jobs is an LRU with expiry; it outlives every advert
// it remembers (Config.SeenTTL >= Config.MaxLifetime).
//
// # Bounds
//
// Every inbound stream is rate-limited per sending peer (token bucket),
// read with a size cap and a deadline, and checked: TTL cap, then, in the
// run loop, signature, expiry, field sizes. Bad input is dropped, counted
// in Stats by DropReason, and the stream reset (a bad signature is found
// after the stream is closed); the Flooder keeps serving. The run loop
// remembers the last 64 envelopes it verified: the other copies of one
// radius of a flood, one from each neighbour that forwards it, carry the
// same bytes and are not verified again.
//
// # Use
//
//	f, err := flood.New(h, overlay, worker.Deliver, flood.DefaultConfig())
//	defer f.Close()
//	// beside the collection of offers, which closes enough:
//	err = f.Advertise(ctx, flood.Advert{Job: id, Body: need}, enough, flood.ZorillaSchedule())
//
// Advertise floods radius 1 and waits 1 s, radius 2 and waits 2 s, ..., and
// stops as soon as enough is closed, ctx ends (the scheduling deadline), or
// the largest radius has been waited for (ErrMaxRadius). The schedule itself
// is Growth, a pure value: Advertise's loop steps it, and so does a job's
// submitter (job/lifecycle), which floods each radius with Flood and moves
// on sooner when a radius has been answered.
// Direct sends an advert to a few named peers as a flood's last hop (TTL
// 1): a submitter reaches the last peers its overlay knows that way,
// rather than with a radius every agent already reached forwards again.
//
// # Wire
//
// One stream carries one uvarint-length-prefixed frame (internal/wire)
// holding the JSON message {"ttl": int, "envelope": bytes}, and is closed.
package flood
