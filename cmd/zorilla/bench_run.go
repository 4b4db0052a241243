package main

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
)

// benchTarget is one configuration the bench measures.
type benchTarget interface {
	name() string
	// measure runs the ping-pong once and returns figures for at least
	// sizes (ascending).
	measure(ctx context.Context, sizes []int) (map[int]figure, error)
}

// benchRun is a target and what it gave so far.
type benchRun struct {
	target   benchTarget
	series   *benchSeries
	optional bool // a failure is noted in the table and the others go on
}

func benchPingpongAction(c *cli.Context) error {
	cfg, err := benchConfigFrom(c)
	if err != nil {
		return usageError(err)
	}
	ctx, stop := notifyInterrupt(c.Context)
	defer stop()
	net, err := newDemoNet("bench", c.App.ErrWriter)
	if err != nil {
		return cli.Exit("bench: "+err.Error(), 1)
	}
	defer net.close(cfg.keep)
	res, err := runBench(ctx, cfg, net)
	if res != nil && res.rounds > 0 {
		writeBenchTable(c.App.Writer, res, cfg.sizes)
	}
	if err != nil {
		return stepError(ctx, "bench", err)
	}
	return nil
}

// runBench starts the agents and the other configurations, then runs the
// rounds. After an error it returns the rounds completed so far.
func runBench(ctx context.Context, cfg benchConfig, net *demoNet) (*benchResults, error) {
	prog, err := programOrExample(ctx, net, cfg.program, benchExample)
	if err != nil {
		return nil, err
	}
	slots := 1 // one slot each: rank 0 on a0, rank 1 on a1
	if cfg.colocated {
		slots = 2 // and both on one agent for the co-located rows
	}
	if err := net.up(ctx, 2, slots); err != nil {
		return nil, err
	}
	z := &zorillaTarget{cl: net.agents[0].client, prog: prog, timeout: cfg.timeout}
	runs := []*benchRun{{target: z}}
	var missing []*benchSeries
	if cfg.raw {
		raw, err := startRaw(ctx, net.dir)
		if err != nil {
			return nil, err
		}
		defer raw.close()
		fmt.Fprintf(net.log, "zorilla bench: raw libp2p stream to an echo process over %s\n", raw.describe())
		runs = append(runs, &benchRun{target: raw})
	}
	if cfg.relay {
		relay, err := startRelay(net.dir)
		if err != nil {
			return nil, err
		}
		defer relay.close()
		fmt.Fprintf(net.log, "zorilla bench: relay chain: this process -> unix socket -> relay -> %s -> relay -> unix socket -> echo process\n",
			relay.describe())
		runs = append(runs, &benchRun{target: relay})
	}
	if cfg.netpipe {
		targets, absent := netpipeTargets(net.dir, exec.LookPath)
		for _, t := range targets {
			runs = append(runs, &benchRun{target: t, optional: true})
		}
		missing = absent
	}
	var local []*benchRun
	if cfg.colocated {
		var absent []*benchSeries
		local, absent = colocatedRuns(z, net.dir, exec.LookPath)
		missing = append(missing, absent...)
	}
	res := &benchResults{}
	for _, r := range runs {
		r.series = &benchSeries{name: r.target.name()}
		res.series = append(res.series, r.series)
	}
	res.series = append(res.series, missing...)
	for _, r := range local { // their series are made, with their base
		runs = append(runs, r)
		res.series = append(res.series, r.series)
	}
	for i := range cfg.rounds {
		took, err := benchRound(ctx, runs, i, cfg.sizes, net.log)
		if err != nil {
			return res, fmt.Errorf("round %d: %w", i+1, err)
		}
		res.rounds = i + 1
		fmt.Fprintf(net.log, "zorilla bench: round %d/%d: %s\n", i+1, cfg.rounds, took)
	}
	return res, nil
}

// benchRound runs every configuration once, back to back, and says how
// long each took. An optional one that fails is left out of the next
// rounds.
func benchRound(ctx context.Context, runs []*benchRun, i int, sizes []int, log io.Writer) (string, error) {
	var took []string
	for _, r := range runs {
		if r.series.note != "" {
			continue
		}
		t0 := time.Now()
		figs, err := r.target.measure(ctx, sizes)
		if err == nil {
			r.series.add(i, figs)
			took = append(took, fmt.Sprintf("%s %v", r.series.name, since(t0)))
			continue
		}
		if !r.optional || ctx.Err() != nil {
			return "", fmt.Errorf("%s: %w", r.series.name, err)
		}
		r.series.note = "failed (its error is on stderr)"
		fmt.Fprintf(log, "zorilla bench: %s failed, left out from now on: %v\n", r.series.name, err)
	}
	return strings.Join(took, ", "), nil
}
