package main

import (
	"github.com/urfave/cli/v2"

	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/node"
	"github.com/zorilla-p2p/zorilla/worker"
)

// abuseFlags are the owner's caps on one job (worker.AbuseLimits).
func abuseFlags() []cli.Flag {
	def := worker.DefaultAbuseLimits()
	return []cli.Flag{
		&cli.IntFlag{Name: "max-job-procs", EnvVars: []string{"ZORILLA_MAX_JOB_PROCS"}, Value: def.MaxJobProcs,
			Usage: "take part only in jobs of at most this many processes in all (n × r)"},
		&cli.StringFlag{Name: "max-job-stage", EnvVars: []string{"ZORILLA_MAX_JOB_STAGE"}, Value: formatSize(def.MaxJobStage),
			Usage: "stage at most this much for one job (program and inputs), e.g. 4G"},
	}
}

// abuseConfig sets the caps from the flags; bad values are usage errors.
func abuseConfig(c *cli.Context, cfg *node.Config) error {
	a := &cfg.Services.Worker.Abuse
	a.MaxJobProcs = c.Int("max-job-procs")
	if a.MaxJobProcs < 1 || a.MaxJobProcs > proto.MaxProcs {
		return usageErrorf("--max-job-procs: must be 1..%d, got %d", proto.MaxProcs, a.MaxJobProcs)
	}
	n, err := parseSize(c.String("max-job-stage"))
	if err != nil || n < 1 {
		return usageErrorf("--max-job-stage: want a positive size such as 4G, got %q", c.String("max-job-stage"))
	}
	a.MaxJobStage = n
	return nil
}
