package main

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/zorilla-p2p/zorilla/testnet/bench"
	"github.com/zorilla-p2p/zorilla/testnet/localnet"
)

// benchMalleableCommand runs the malleable workload (bench.RunWorkload)
// and prints its tables.
func benchMalleableCommand() *cli.Command {
	def := bench.DefaultWorkloadConfig()
	return &cli.Command{
		Name:  "malleable",
		Usage: "a workload of rigid and malleable jobs on one-slot agents, run rigid then malleable",
		Description: fmt.Sprintf("Starts %d agents as processes on 127.0.0.1, one slot each, builds examples/heat (or runs\n"+
			"--program FILE) and submits %d jobs over a minute, long and short, each step of heat costing\n"+
			"%d µs per cell over %d cells (less time per step on more ranks). The workload runs twice:\n"+
			"every job rigid at its largest size, then the malleable ones from their least size. It prints\n"+
			"each job's start, end and sizes, and each run's makespan, mean completion time, utilization\n"+
			"and largest wait.", def.Agents, len(def.Jobs), def.Work, def.Cells),
		ArgsUsage: " ",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "program", Usage: "run this heat `FILE` instead of building examples/heat"},
			&cli.BoolFlag{Name: "keep", Usage: "keep the agents' data dirs and logs"},
		},
		OnUsageError: subUsageError,
		Action: func(c *cli.Context) error {
			cfg := def
			cfg.Program = c.String("program")
			return onBenchNet(c, "malleable", func(ctx context.Context, net *localnet.Net) error {
				runs, err := bench.RunWorkload(ctx, cfg, net, c.App.ErrWriter)
				if werr := bench.WriteWorkloadTable(c.App.Writer, runs); werr != nil {
					return werr
				}
				return err
			})
		},
	}
}

// benchResizeCommand measures the cost of resizes (bench.ResizeCost).
func benchResizeCommand() *cli.Command {
	return &cli.Command{
		Name:  "resize",
		Usage: "the cost of a malleable job's resizes against a plain checkpoint restart",
		Description: "Starts 8 agents as processes on 127.0.0.1, one slot each, and runs examples/heat -n 4:8 with a\n" +
			"checkpoint at every step: it grows from 4 to 8 when a job holding four agents ends, gives\n" +
			"way back to 4 when a rigid job of 4 comes, and once at 8 again it is stopped with a\n" +
			"checkpoint and resumed. It prints, for each, the time from the ask to the job stopped at its\n" +
			"checkpoint and from there to the job running again.",
		ArgsUsage: " ",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "program", Usage: "run this heat `FILE` instead of building examples/heat"},
			&cli.BoolFlag{Name: "keep", Usage: "keep the agents' data dirs and logs"},
		},
		OnUsageError: subUsageError,
		Action: func(c *cli.Context) error {
			return onBenchNet(c, "resize", func(ctx context.Context, net *localnet.Net) error {
				steps, err := bench.ResizeCostLocal(ctx, c.String("program"), net, c.App.ErrWriter)
				if werr := bench.WriteResizeTable(c.App.Writer, steps); werr != nil {
					return werr
				}
				return err
			})
		},
	}
}

// onBenchNet runs bench name on a local network of agent processes, which
// --keep keeps; an interrupt ends it. The command takes no arguments.
func onBenchNet(c *cli.Context, name string, run func(context.Context, *localnet.Net) error) error {
	if c.NArg() > 0 {
		return usageErrorf("bench %s: unexpected argument %q", name, c.Args().First())
	}
	ctx, stop := notifyInterrupt(c.Context)
	defer stop()
	net, err := localnet.New("bench", c.App.ErrWriter, "")
	if err != nil {
		return err
	}
	defer net.Close(c.Bool("keep"))
	return run(ctx, net)
}
