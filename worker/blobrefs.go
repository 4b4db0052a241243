package worker

import (
	"sync"

	"github.com/zorilla-p2p/zorilla/internal/blob"
)

// stagedBlobs counts, for each blob, the jobs here that staged it, and
// remembers which blobs this worker fetched from a submitter. A fetched
// blob is removed from the store when the last job using it ends: the
// store is bounded (blob.Config.MaxTotal), and a worker that kept every
// program it ever ran would refuse every job once full. Blobs the local
// user uploaded are never removed here, nor those the agent's own
// submitter pinned for the jobs it runs (blob.Store.Pin).
type stagedBlobs struct {
	mu      sync.Mutex
	refs    map[blob.Hash]int
	fetched map[blob.Hash]bool
}

// acquire counts one more job using h; called before the store is asked
// for h, so a job ending meanwhile never removes it under this one.
func (b *stagedBlobs) acquire(h blob.Hash) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.refs == nil {
		b.refs, b.fetched = map[blob.Hash]int{}, map[blob.Hash]bool{}
	}
	b.refs[h]++
}

// markFetched records that h came from a submitter.
func (b *stagedBlobs) markFetched(h blob.Hash) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.refs[h] > 0 {
		b.fetched[h] = true
	}
}

// release counts one job fewer using h and says whether h should leave
// the store: no job uses it and it was fetched.
func (b *stagedBlobs) release(h blob.Hash) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.refs[h] == 0 {
		return false
	}
	b.refs[h]--
	if b.refs[h] > 0 {
		return false
	}
	remove := b.fetched[h]
	delete(b.refs, h)
	delete(b.fetched, h)
	return remove
}

// releaseBlobs ends a job's use of its staged blobs, removing the fetched
// ones no other job uses.
func (s *Service) releaseBlobs(held []blob.Hash) {
	for _, h := range held {
		if !s.staged.release(h) {
			continue
		}
		if err := s.blobs.Remove(h); err != nil {
			log.Debugw("staged blob not removed", "hash", h, "err", err)
		}
	}
}
