// Package flood owns the advert protocol (/zorilla/flood/1.0.0): signed job
// adverts flooded over the overlay's neighbours with a radius (TTL), the
// forwarding rule (forward only a TTL larger than any already forwarded for
// that job), the bounded seen-cache, per-neighbour rate limits, and the
// submitter's growing-radius loop (radius 1, wait t; radius 2, wait 2t; ...).
//
// flood does not know what a job needs: an advert's body is opaque bytes,
// signed with the rest, that the job and worker packages encode and decode.
package flood
