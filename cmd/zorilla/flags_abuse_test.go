package main

import (
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/zorilla-p2p/zorilla/node"
	"github.com/zorilla-p2p/zorilla/worker"
)

func TestAbuseFlags(t *testing.T) {
	parse := func(args ...string) (worker.AbuseLimits, error) {
		var cfg node.Config
		app := &cli.App{Flags: abuseFlags(), Action: func(c *cli.Context) error { return abuseConfig(c, &cfg) }}
		err := app.Run(append([]string{"zorilla"}, args...))
		return cfg.Services.Worker.Abuse, err
	}
	def := worker.DefaultAbuseLimits()
	if a, err := parse(); err != nil || a.MaxJobProcs != def.MaxJobProcs || a.MaxJobStage != def.MaxJobStage {
		t.Fatalf("defaults: %+v, %v", a, err)
	}
	if a, err := parse("--max-job-procs", "64", "--max-job-stage", "512M"); err != nil || a.MaxJobProcs != 64 || a.MaxJobStage != 512<<20 {
		t.Fatalf("set: %+v, %v", a, err)
	}
}

func TestAbuseFlagsRefuseBadValues(t *testing.T) {
	dir := shortDataDir(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--max-job-procs", "0"}, "--max-job-procs: must be 1..100000, got 0"},
		{[]string{"--max-job-procs", "100001"}, "--max-job-procs: must be 1..100000"},
		{[]string{"--max-job-stage", "lots"}, `--max-job-stage: want a positive size such as 4G, got "lots"`},
		{[]string{"--max-job-stage", "0"}, "--max-job-stage: want a positive size"},
	} {
		args := append([]string{"agent", "--data-dir", dir, "--listen", "/ip4/127.0.0.1/tcp/0", "--mdns=false"}, tc.args...)
		r := zorilla(args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%v: want exit 2 and one line with %q, got %v", tc.args, tc.want, r)
		}
	}
}
