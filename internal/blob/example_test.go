package blob_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/zorilla-p2p/zorilla/internal/blob"
)

// A submitter puts a program in its store and sends the hash; a worker
// fetches it by that hash (anything else is refused) and stages it into the
// job folder.
func Example() {
	tmp, _ := os.MkdirTemp("", "zorilla-blob-example-")
	defer os.RemoveAll(tmp)
	submitter, _ := blob.New(blob.DefaultConfig(filepath.Join(tmp, "submitter")))
	worker, _ := blob.New(blob.DefaultConfig(filepath.Join(tmp, "worker")))

	h, size, _ := submitter.Put(strings.NewReader("#!/bin/sh\necho hello\n"), 0)
	fmt.Println(h, size)

	_, err := worker.PutHash(strings.NewReader("#!/bin/sh\nrm -rf ~\n"), h, 0)
	fmt.Println(err != nil)

	rc, _, _ := submitter.Open(h)
	defer rc.Close()
	if _, err := worker.PutHash(rc, h, 0); err != nil {
		fmt.Println(err)
	}
	fmt.Println(worker.CopyTo(h, filepath.Join(tmp, "prog"), 0o755))
	// Output:
	// bfdeaeb08cffb6a36438bcd12dda25417e3cdd36f1e7e482a2849d539225288b 21
	// true
	// <nil>
}
