package submitter

import (
	"context"
	"sync"

	"github.com/zorilla-p2p/zorilla/job"
)

// feed is an append-only, bounded log of a job's updates. The session appends
// without ever blocking; each watcher reads at its own cursor. A watcher that
// falls more than max updates behind skips ahead and is told how many it lost.
type feed struct {
	mu     sync.Mutex
	max    int
	first  int // index of items[0] in the whole log
	items  []job.Update
	closed bool
	wake   chan struct{} // closed and replaced on every append
}

func newFeed(max int) *feed { return &feed{max: max, wake: make(chan struct{})} }

func (f *feed) append(u job.Update) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return
	}
	f.items = append(f.items, u)
	if over := len(f.items) - f.max; over > 0 {
		f.items = append(f.items[:0:0], f.items[over:]...)
		f.first += over
	}
	if u.Kind == "end" {
		f.closed = true
	}
	close(f.wake)
	f.wake = make(chan struct{})
}

// read returns the updates from cursor on, waiting for at least one, and the
// next cursor; done is true once the end has been read.
func (f *feed) read(ctx context.Context, cursor int) (us []job.Update, next int, done bool, err error) {
	for {
		f.mu.Lock()
		if cursor < f.first {
			us = append(us, job.Update{Kind: "output", Stream: "stderr", Rank: -1,
				Note: "output skipped: watcher fell behind", Line: ""})
			cursor = f.first
		}
		if i := cursor - f.first; i < len(f.items) {
			us = append(us, f.items[i:]...)
			next = f.first + len(f.items)
			done = f.closed
			f.mu.Unlock()
			return us, next, done, nil
		}
		if f.closed {
			f.mu.Unlock()
			return us, cursor, true, nil
		}
		wake := f.wake
		f.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return us, cursor, false, ctx.Err()
		}
	}
}
