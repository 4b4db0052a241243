package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/node"
)

func cancelCommand() *cli.Command {
	return &cli.Command{
		Name:         "cancel",
		Usage:        "cancel a job everywhere: its processes are killed and its hosts freed",
		ArgsUsage:    "JOB   (a job ID or a unique prefix of one)",
		Flags:        jobClientFlags(),
		OnUsageError: onUsageError,
		Action:       cancelAction,
	}
}

func cancelAction(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErrorf("cancel takes one JOB, got %d arguments", c.NArg())
	}
	if _, err := proto.ParseJobID(c.Args().First()); err != nil {
		return usageError(err)
	}
	cl, rec, err := clientForJob(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	if rec.State.Terminal() && rec.State != job.Stopped { // a stopped job's cancel drops its checkpoint
		return cli.Exit(fmt.Sprintf("job %s already ended: %s", rec.ID, rec.State), 1)
	}
	ctx, cancel := context.WithTimeout(c.Context, apiTimeout)
	defer cancel()
	if err := cl.Cancel(ctx, rec.ID); err != nil {
		return agentError(err)
	}
	end, err := awaitEnd(ctx, cl, rec.ID)
	if err != nil {
		return cli.Exit(fmt.Sprintf("job %s: cancel sent, but its end was not seen: %v", rec.ID, err), 1)
	}
	if end.State != job.Cancelled {
		return cli.Exit(fmt.Sprintf("job %s ended %s before the cancel: %s", rec.ID, end.State, end.Reason), 1)
	}
	fmt.Fprintf(c.App.Writer, "job %s cancelled\n", rec.ID)
	return nil
}

// awaitEnd follows a job until it ends and returns its final record; the
// cancel was asynchronous, and the command says what really happened.
func awaitEnd(ctx context.Context, cl *node.Client, id job.ID) (job.Record, error) {
	var end *job.Record
	err := cl.Watch(ctx, id, func(u job.Update) {
		if u.Kind == "end" && u.Record != nil {
			end = u.Record
		}
	})
	if end == nil && err == nil {
		err = errors.New("the watch ended without the job's end")
	}
	if end == nil {
		return job.Record{}, err
	}
	return *end, nil
}
