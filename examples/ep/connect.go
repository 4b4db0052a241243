package main

import (
	"context"

	"github.com/zorilla-p2p/zorilla/examples/internal/npb"
)

// connect joins the job's ranks. It returns the communicator and a function
// to call at the end with the run's error, which leaves the job.
func connect(ctx context.Context) (comm, func(error) error, error) {
	return npb.Solo{}, func(error) error { return nil }, nil
}
