package main

import (
	"github.com/urfave/cli/v2"

	"github.com/zorilla-p2p/zorilla/internal/gang"
	"github.com/zorilla-p2p/zorilla/node"
)

// gangFlags turn on gang scheduling of the jobs that share this machine
// (package internal/gang).
func gangFlags() []cli.Flag {
	def := gang.DefaultConfig()
	return []cli.Flag{
		&cli.DurationFlag{Name: "gang-slice", EnvVars: []string{"ZORILLA_GANG_SLICE"},
			Usage: "gang-schedule the jobs sharing this machine (with --max-jobs > 1) on aligned time slices of this length, e.g. 2s: " +
				"each runs on all its hosts at once in its slices, frozen in the others; every agent of the network must use the same " +
				"--gang-slice and --gang-columns (0: off, the OS co-schedules them)"},
		&cli.IntFlag{Name: "gang-columns", EnvVars: []string{"ZORILLA_GANG_COLUMNS"}, Value: def.Columns,
			Usage: "with --gang-slice: slices in one round, the most jobs taking turns on one machine (1-64)"},
	}
}

// gangConfig reads the gang flags into cfg.
func gangConfig(c *cli.Context, cfg *node.Config) error {
	slice := c.Duration("gang-slice")
	if slice == 0 {
		return nil
	}
	g := gang.Config{Slice: slice, Columns: c.Int("gang-columns")}
	if err := g.Validate(); err != nil {
		return usageErrorf("--gang-slice/--gang-columns: %v", err)
	}
	cfg.Services.Worker.Gang = g
	return nil
}
