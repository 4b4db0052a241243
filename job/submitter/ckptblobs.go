package submitter

import (
	"sync"

	"github.com/zorilla-p2p/zorilla/internal/blob"
	"github.com/zorilla-p2p/zorilla/job"
)

// ckptBlobs knows which jobs' checkpoints hold each blob of the
// submitter's store. The store keeps files by content, so two jobs whose
// ranks saved the same bytes share one blob, and a checkpoint file may
// equal a file the user uploaded: a job's cleanup removes a blob only when
// no other job's checkpoints hold it and it was not in the store before a
// checkpoint brought it there.
type ckptBlobs struct {
	store *blob.Store

	mu      sync.Mutex
	holders map[blob.Hash]map[job.ID]bool
	foreign map[blob.Hash]bool // in the store before any checkpoint held it
}

func newCkptBlobs(store *blob.Store) *ckptBlobs {
	return &ckptBlobs{store: store, holders: map[blob.Hash]map[job.ID]bool{}, foreign: map[blob.Hash]bool{}}
}

// hold records that job id's checkpoints hold h. Called before the file
// is put in the store, so that a blob already there and held by no job is
// known to be someone else's.
func (c *ckptBlobs) hold(id job.ID, h blob.Hash) {
	c.mu.Lock()
	defer c.mu.Unlock()
	js := c.holders[h]
	if js == nil {
		js = map[job.ID]bool{}
		c.holders[h] = js
		if c.store.Has(h) {
			c.foreign[h] = true
		}
	}
	js[id] = true
}

// holdKept records the files a job's record lists, when its session
// starts again (a resume, a re-attach after a restart): they were put by
// its checkpoints, so they are not counted as someone else's.
func (c *ckptBlobs) holdKept(id job.ID, hs []blob.Hash) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, h := range hs {
		if c.holders[h] == nil {
			c.holders[h] = map[job.ID]bool{}
		}
		c.holders[h][id] = true
	}
}

// release ends job id's hold on h and removes h from the store when no
// job holds it any more and a checkpoint brought it.
func (c *ckptBlobs) release(id job.ID, h blob.Hash) {
	c.mu.Lock()
	defer c.mu.Unlock()
	js := c.holders[h]
	delete(js, id)
	if len(js) > 0 {
		return
	}
	delete(c.holders, h)
	if c.foreign[h] {
		delete(c.foreign, h)
		return
	}
	if err := c.store.Remove(h); err != nil {
		log.Debugw("checkpoint file not removed", "job", id, "hash", h, "err", err)
	}
}
