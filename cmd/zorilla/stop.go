package main

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/zorilla-p2p/zorilla/job/submitter"
	"github.com/zorilla-p2p/zorilla/node"
)

func stopCommand() *cli.Command {
	return &cli.Command{
		Name:  "stop",
		Usage: "stop a running job with a checkpoint, to resume it later (zorilla resume)",
		Description: "The job's ranks take a checkpoint at their next Checkpoint call, whatever --checkpoint-every\n" +
			"says; once it is complete every process ends and the hosts are freed. If the program\n" +
			"takes no checkpoint within --timeout, the job keeps running.",
		ArgsUsage: "JOB   (a job ID or a unique prefix of one)",
		Flags: append(jobClientFlags(),
			&cli.BoolFlag{Name: "checkpoint", Usage: "take a checkpoint before stopping (required: to end a job without one, cancel it)"},
			&cli.DurationFlag{Name: "timeout", Value: submitter.DefaultStopTimeout, Usage: "how long to wait for the program's next checkpoint"}),
		OnUsageError: onUsageError,
		Action:       stopAction,
	}
}

func stopAction(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErrorf("stop takes one JOB, got %d arguments", c.NArg())
	}
	if !c.Bool("checkpoint") {
		return usageErrorf("stop needs --checkpoint (to end a job without one: zorilla cancel)")
	}
	timeout := c.Duration("timeout")
	if timeout <= 0 || timeout > node.MaxStopTimeout {
		return usageErrorf("--timeout %v: want a duration between 0 and %v", timeout, node.MaxStopTimeout)
	}
	cl, rec, err := clientForJob(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	if rec.State.Terminal() {
		return cli.Exit(fmt.Sprintf("job %s already ended: %s", rec.ID, rec.State), 1)
	}
	ctx, cancel := context.WithTimeout(c.Context, timeout+apiTimeout)
	defer cancel()
	if err := cl.Stop(ctx, rec.ID, timeout); err != nil {
		return agentError(err)
	}
	ctx2, cancel2 := context.WithTimeout(c.Context, apiTimeout)
	defer cancel2()
	if end, err := cl.Job(ctx2, rec.ID); err == nil {
		fmt.Fprintf(c.App.Writer, "job %s %s; zorilla resume %s starts it again from there\n", rec.ID, end.Reason, rec.ID)
		return nil
	}
	fmt.Fprintf(c.App.Writer, "job %s stopped\n", rec.ID)
	return nil
}
