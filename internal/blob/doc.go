// Package blob is a content-addressed store of files on the local disk: the
// programs and input files of jobs, named by the sha256 of their content.
//
// A submitter puts a job's program and inputs in its Store and sends their
// hashes; a worker fetches what it lacks by hash (PutHash refuses content
// whose sum differs from the hash asked for), and copies a verified blob into
// the job's folder with CopyTo before starting processes. Nothing in a Store
// is trusted on its name alone: Open returns a reader that fails with
// ErrCorrupt at the end if the content does not match, Verify checks a blob
// and removes it when it is corrupt, and CopyTo never leaves a corrupt copy.
//
// Every write is bounded: one blob by Config.MaxSize (and by the maxSize of
// the call), the whole store by Config.MaxTotal. A Store owns its folder: it
// removes leftover temporary files when it opens, and keeps count of the bytes
// it holds, so other programs must not write into that folder.
//
// Layout: one file per blob, named by the 64 lowercase hex digits of its
// hash, read-only (0444); temporary files start with ".put-" and are renamed
// into place only once their hash is known, so a blob file is never half
// written.
package blob
