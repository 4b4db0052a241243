package submitter

import (
	"bytes"
	"testing"

	"github.com/zorilla-p2p/zorilla/internal/blob"
	"github.com/zorilla-p2p/zorilla/job"
)

// Two jobs whose checkpoints saved the same bytes share one blob: the
// first job's cleanup leaves it to the second, and the last removes it. A
// blob the user had uploaded before a checkpoint equalled it stays.
func TestCkptBlobsShared(t *testing.T) {
	store, err := blob.New(blob.DefaultConfig(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	put := func(b []byte) blob.Hash {
		t.Helper()
		h, _, err := store.Put(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	sum := func(b []byte) blob.Hash { return blob.Sum(b) }
	c := newCkptBlobs(store)
	a, b := job.ID("job-a"), job.ID("job-b")

	same := []byte("the same saved state")
	c.hold(a, sum(same))
	h := put(same)
	c.hold(b, h)
	put(same)
	c.release(a, h)
	if !store.Has(h) {
		t.Fatal("job a's cleanup removed the file job b's checkpoint still holds")
	}
	c.release(b, h)
	if store.Has(h) {
		t.Fatal("the file stayed after the last job holding it ended")
	}

	uploaded := put([]byte("a file the user uploaded"))
	c.hold(a, uploaded) // a checkpoint with the same bytes
	c.release(a, uploaded)
	if !store.Has(uploaded) {
		t.Fatal("a job's cleanup removed a blob that was in the store before its checkpoint")
	}

	// A session started again holds what its record lists as its own.
	kept := put([]byte("a file of a checkpoint before a restart"))
	c2 := newCkptBlobs(store)
	c2.holdKept(b, []blob.Hash{kept})
	c2.release(b, kept)
	if store.Has(kept) {
		t.Fatal("a resumed job's own checkpoint file stayed after it ended")
	}
}
