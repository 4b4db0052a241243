// Package chunk owns peer-assisted staging: the /zorilla/chunk/1.0.0
// protocol by which the hosts of a job fetch its program and inputs from
// each other in fixed-size chunks, with the submitter as the source of
// last resort.
//
// A file is split into chunks of Size bytes. The submitter (the owner)
// answers a manifest request with the file's size and the sha256 of every
// chunk; a host then fetches each chunk from the job's other hosts that
// hold it (a host serves the chunks it has verified so far, even before its
// own copy is complete) and from the owner only when no peer has it: each
// chunk has one seed host that takes it from the owner, the others take it
// from the seed or from any host that has it since. Every chunk is checked
// against the manifest as it arrives (a bad one is dropped, the peer that
// sent it is not asked again) and the whole file against its hash before it
// enters the blob store; nothing unverified is ever staged.
//
// Service serves the protocol on an rpc endpoint: a request names a job, its
// key and a file hash, and is answered only when a Grant (the submitter's
// sessions, the worker's running jobs) says the asking peer may have that
// file. It bounds the chunks it serves at once, counts the bytes it served
// as owner and as peer, and what it fetched, for the agent's stats.
package chunk
