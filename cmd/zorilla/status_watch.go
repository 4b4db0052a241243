package main

import (
	"context"
	"errors"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/node"
)

// watchFlag is status's --watch.
func watchFlag() cli.Flag {
	return &cli.BoolFlag{Name: "watch", Aliases: []string{"w"},
		Usage: "follow the job: its output tagged by rank, its states and, while it is placed, the flood's progress; then its status (Ctrl-C stops following, not the job)"}
}

// watchStatus follows a job until it ends (or Ctrl-C), then prints its
// status. Unlike submit, an interrupt leaves the job alone.
func watchStatus(c *cli.Context, cl *node.Client, id job.ID) error {
	ctx, stop := notifyInterrupt(c.Context)
	defer stop()
	p := newPrinter(c.App.Writer, c.App.ErrWriter, id)
	p.progress = newProgress(c.App.ErrWriter, planOf(c.Context, cl.Job, id))
	err := cl.Watch(ctx, id, p.update)
	p.mu.Lock()
	p.progress.clear()
	p.mu.Unlock()
	if err != nil && !errors.Is(err, context.Canceled) {
		return agentError(err)
	}
	rctx, cancel := context.WithTimeout(c.Context, apiTimeout)
	defer cancel()
	rec, err := cl.Job(rctx, id)
	if err != nil {
		return agentError(err)
	}
	writeStatus(c.App.Writer, rec, time.Now())
	return nil
}
