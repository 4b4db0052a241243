package worker

import (
	"testing"

	"github.com/zorilla-p2p/zorilla/internal/blob"
)

func TestStagedBlobs(t *testing.T) {
	var b stagedBlobs
	fetched, local := blob.Sum([]byte("fetched")), blob.Sum([]byte("local"))
	b.acquire(fetched) // job 1 fetches it
	b.markFetched(fetched)
	b.acquire(fetched) // job 2 finds it in the store
	b.acquire(local)   // job 2's input the local user uploaded
	if b.release(fetched) {
		t.Fatal("removed while job 2 still uses it")
	}
	if b.release(local) {
		t.Fatal("a blob never fetched would be removed")
	}
	if !b.release(fetched) {
		t.Fatal("the last job's end keeps a fetched blob")
	}
	if b.release(fetched) {
		t.Fatal("a release with no job using it removes again")
	}
	b.markFetched(local) // no job holds it: not recorded
	b.acquire(local)
	if b.release(local) {
		t.Fatal("markFetched without a job made a local blob removable")
	}
	if len(b.refs) != 0 || len(b.fetched) != 0 {
		t.Fatalf("tables not empty after every release: %v %v", b.refs, b.fetched)
	}
}
