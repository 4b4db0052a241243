package main

import (
	"context"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"
)

func resumeCommand() *cli.Command {
	return &cli.Command{
		Name:  "resume",
		Usage: "start a stopped job again from its checkpoint, on whatever hosts a new flood finds, and follow it",
		Description: "Like submit, the command then follows the job: its output tagged by rank, its state changes\n" +
			"and notices on stderr, the --output files brought back when it ends, and it exits with the job's\n" +
			"status. Ctrl-C cancels the job everywhere (zorilla stop JOB --checkpoint stops it again);\n" +
			"--detach returns at once.",
		ArgsUsage: "JOB   (a job ID or a unique prefix of one)",
		Flags: append(jobClientFlags(),
			&cli.BoolFlag{Name: "elsewhere", Usage: "keep the job off the hosts of the run that was stopped"},
			&cli.BoolFlag{Name: "detach", Usage: "return once the job is resumed, without following it"},
			outputDirFlag()),
		OnUsageError: onUsageError,
		Action:       resumeAction,
	}
}

func resumeAction(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErrorf("resume takes one JOB, got %d arguments", c.NArg())
	}
	outDir, err := outputDir(c)
	if err != nil {
		return err
	}
	cl, rec, err := clientForJob(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, stop := notifyInterrupt(c.Context)
	defer stop()
	rctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	if err := cl.Resume(rctx, rec.ID, c.Bool("elsewhere")); err != nil {
		return interruptedOr(ctx, err)
	}
	if c.Bool("detach") {
		from := ""
		if ck, ok := rec.LastComplete(); ok {
			from = fmt.Sprintf(" from checkpoint %d", ck.Num)
		}
		fmt.Fprintf(c.App.Writer, "job %s resumed%s at %s; follow it with zorilla status %s\n", rec.ID, from,
			time.Now().Format(timeLayout), rec.ID)
		return nil
	}
	// The agent's first update says which checkpoint the job resumes from.
	end, err := follow(ctx, stop, c, cl, rec.ID)
	if err != nil {
		return err
	}
	return finish(c, cl, end, outDir)
}
