package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/zorilla-p2p/zorilla/testnet"
)

// benchContentionCommand runs the contention experiment
// (testnet.Contention): how the flood scheduler shares a network where one
// job fits at a time. It prints its table.
func benchContentionCommand() *cli.Command {
	def := testnet.DefaultContentionConfig()
	return &cli.Command{
		Name:  "contention",
		Usage: "K jobs competing for a loopback network where one fits at a time: makespan and utilization",
		Description: "Starts --agents agents in this process, one slot each, runs one job of -n processes sleeping\n" +
			"--run alone (the reference), then for each K of --jobs submits K such jobs at once from different\n" +
			"agents and waits for all of them. It prints, per K, the makespan against the ideal serial schedule\n" +
			"(K lone jobs back to back), the utilization (the part of the makespan during which the slots were\n" +
			"held by a starting or running job), the idle gaps between one job's end and the next one's start,\n" +
			"and the pairs of jobs started in the opposite order of their submission.",
		ArgsUsage: " ",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "agents", Value: def.Agents, Usage: "agents, one slot each"},
			&cli.StringFlag{Name: "jobs", Value: "2,4,8", Usage: "`K` values, comma-separated, one round each"},
			&cli.IntFlag{Name: "n", Value: def.N, Usage: "processes of each job (more than half the agents: one fits at a time)"},
			&cli.DurationFlag{Name: "run", Value: def.Run, Usage: "how long each process sleeps"},
			&cli.DurationFlag{Name: "deadline", Value: def.Deadline, Usage: "each job's scheduling deadline"},
		},
		OnUsageError: subUsageError,
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usageErrorf("bench contention: unexpected argument %q", c.Args().First())
			}
			cfg := def
			cfg.Agents, cfg.N, cfg.Run, cfg.Deadline = c.Int("agents"), c.Int("n"), c.Duration("run"), c.Duration("deadline")
			ks, err := parseCounts(c.String("jobs"))
			if err != nil {
				return usageErrorf("--jobs: %v", err)
			}
			cfg.Jobs = ks
			ctx, stop := notifyInterrupt(c.Context)
			defer stop()
			start := time.Now()
			rounds, err := testnet.Contention(ctx, cfg, func(r testnet.ContentionRound) {
				fmt.Fprintf(c.App.ErrWriter, "K=%d done after %.0f s\n", r.K, time.Since(start).Seconds())
			})
			fmt.Fprintf(c.App.Writer, "%d agents x 1 slot, jobs of n=%d running sleep %v\n", cfg.Agents, cfg.N, cfg.Run)
			if werr := testnet.WriteContentionTable(c.App.Writer, rounds); werr != nil {
				return werr
			}
			return err
		},
	}
}

// parseCounts reads "2,4,8": positive counts, at most 64 each.
func parseCounts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || k < 1 || k > 64 {
			return nil, fmt.Errorf("%q: want counts 1..64, comma-separated", f)
		}
		out = append(out, k)
	}
	return out, nil
}
