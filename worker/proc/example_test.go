package proc_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/zorilla-p2p/zorilla/worker/proc"
)

// A worker starts rank 1 of a 2-rank job in the job's folder, streams its
// output tagged with the rank, waits for it, and removes the folder.
func Example() {
	base, _ := os.MkdirTemp("", "zorilla-example-")
	defer os.RemoveAll(base)
	dir := filepath.Join(base, "jobs", "job-42")

	r := proc.NewRunner(proc.DefaultConfig())
	p, err := r.Start(context.Background(), proc.Spec{
		Job: "job-42", Rank: 1, Size: 2, Dir: dir,
		Program: "/bin/sh", Args: []string{"-c", `echo "rank $ZORILLA_RANK of $ZORILLA_SIZE"; exit 3`},
		Timeout: time.Minute,
		Limits:  proc.Limits{OpenFiles: 256, CPUSeconds: 60},
	}, func(stream string, line []byte) {
		fmt.Printf("[1] %s: %s\n", stream, line)
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	e := p.Wait()
	fmt.Println(e, e.Success())
	fmt.Println(proc.Cleanup(dir))
	// Output:
	// [1] stdout: rank 1 of 2
	// exit 3 false
	// <nil>
}
