package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/testnet/localnet"
)

// Bounds of the demo network: it runs on one machine.
const (
	maxDemoAgents = 64
	maxDemoProcs  = 64
	// demoExample is the program the demo builds: every rank says where it
	// runs, then the ranks compute π together (Reduce).
	demoExample = "pi"
)

func demoCommand() *cli.Command {
	return &cli.Command{
		Name:  "demo",
		Usage: "start a local network of agents, run an MPI example on it, show its output, stop the network",
		Description: "Starts --agents agents as separate processes on 127.0.0.1 (each its own data dir in a\n" +
			"temporary folder, offering --procs slots), builds examples/" + demoExample + " with the Go toolchain\n" +
			"(or runs --program FILE), submits it with -n ranks through the first agent, streams the\n" +
			"output tagged by rank, prints a summary, and stops every agent.",
		ArgsUsage: "[ARGS...]   (arguments of the program)",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "agents", Usage: "agents to start", Value: 8},
			&cli.IntFlag{Name: "procs", Usage: "processes each agent accepts (its --max-procs and --cores)", Value: 2},
			&cli.IntFlag{Name: "n", Usage: "ranks of the job", DefaultText: "one per agent"},
			&cli.StringFlag{Name: "a", Usage: "placement: spread or concentrate",
				DefaultText: "spread when there is an agent per rank, else concentrate"},
			&cli.StringFlag{Name: "program", Usage: "run this `FILE` instead of building examples/" + demoExample},
			&cli.BoolFlag{Name: "keep", Usage: "keep the agents' data dirs and logs"},
			&cli.DurationFlag{Name: "timeout", Usage: "wall-clock limit of the job", Value: time.Minute},
			&cli.DurationFlag{Name: "checkpoint-every", Usage: "take a checkpoint (where the program calls Comm.Checkpoint) only when `D` has passed since the last one; by default at every call, as submit"},
		},
		OnUsageError: onUsageError,
		Action:       demoAction,
	}
}

// demoConfig is what the demo's flags ask for.
type demoConfig struct {
	agents, procs, n int
	strategy         job.Strategy
	program          string
	args             []string
	keep             bool
	timeout          time.Duration
	checkpointEvery  time.Duration
}

func demoConfigFrom(c *cli.Context) (demoConfig, error) {
	cfg := demoConfig{agents: c.Int("agents"), procs: c.Int("procs"), n: c.Int("n"),
		program: c.String("program"), args: c.Args().Slice(), keep: c.Bool("keep"), timeout: c.Duration("timeout"),
		checkpointEvery: c.Duration("checkpoint-every")}
	if cfg.n == 0 && !c.IsSet("n") {
		cfg.n = cfg.agents
	}
	cfg.strategy = demoStrategy(cfg.n, cfg.agents)
	if c.IsSet("a") {
		s, err := job.ParseStrategy(c.String("a"))
		if err != nil {
			return cfg, fmt.Errorf("-a: %w", err)
		}
		cfg.strategy = s
	}
	switch {
	case cfg.agents < 1 || cfg.agents > maxDemoAgents:
		return cfg, fmt.Errorf("--agents: must be 1..%d, got %d", maxDemoAgents, cfg.agents)
	case cfg.procs < 1 || cfg.procs > maxDemoProcs:
		return cfg, fmt.Errorf("--procs: must be 1..%d, got %d", maxDemoProcs, cfg.procs)
	case cfg.n < 1 || cfg.n > cfg.agents*cfg.procs:
		return cfg, fmt.Errorf("-n: must be 1..%d (agents x procs), got %d", cfg.agents*cfg.procs, cfg.n)
	case cfg.timeout < time.Second:
		return cfg, fmt.Errorf("--timeout: must be at least 1s, got %v", cfg.timeout)
	case cfg.checkpointEvery < 0 || cfg.checkpointEvery > proto.MaxTimeout:
		return cfg, fmt.Errorf("--checkpoint-every: must be between 0 and %v, got %v", proto.MaxTimeout, cfg.checkpointEvery)
	}
	if cfg.program != "" {
		if err := checkLocalFiles(job.Description{Executable: cfg.program}); err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}

func demoAction(c *cli.Context) error {
	cfg, err := demoConfigFrom(c)
	if err != nil {
		return usageError(err)
	}
	out, errw := c.App.Writer, c.App.ErrWriter
	ctx, stop := notifyInterrupt(c.Context)
	defer stop()
	net, err := localnet.New("demo", errw, "")
	if err != nil {
		return cli.Exit("demo: "+err.Error(), 1)
	}
	defer net.Close(cfg.keep)
	rec, err := runDemo(ctx, cfg, net, out, errw)
	if err != nil {
		return err
	}
	return jobExit(rec)
}

// runDemo gets the program, starts the network, runs the job and prints
// the summary. The program is built first: agents need not wait idle
// through a build that takes a minute with an empty Go build cache.
func runDemo(ctx context.Context, cfg demoConfig, net *localnet.Net, out, errw io.Writer) (job.Record, error) {
	prog, err := net.Program(ctx, cfg.program, demoExample)
	if err != nil {
		return job.Record{}, stepError(ctx, "demo", err)
	}
	if err := net.Up(ctx, cfg.agents, cfg.procs); err != nil {
		return job.Record{}, stepError(ctx, "demo", err)
	}
	d := job.NewDescription(prog, cfg.args, cfg.n)
	d.Strategy, d.Timeout, d.Deadline = cfg.strategy, cfg.timeout, 30*time.Second
	d.CheckpointEvery = cfg.checkpointEvery
	if err := d.Validate(); err != nil {
		return job.Record{}, usageError(err)
	}
	cl := net.Agents()[0].Client
	t1 := time.Now()
	id, err := submitJob(ctx, cl, d, false)
	if err != nil {
		return job.Record{}, err
	}
	fmt.Fprintf(errw, "zorilla demo: submitted %s -n %d -a %s through agent a0 as job %s\n", filepath.Base(prog), cfg.n, cfg.strategy, id)
	// No stop: further Ctrl-Cs are ignored, the network is stopped either way.
	rec, err := followJob(ctx, nil, cl, id, newPrinter(out, errw, id))
	if err != nil {
		return rec, err
	}
	writeDemoSummary(out, rec, net.Names(), time.Since(t1))
	return rec, nil
}

// demoStrategy spreads the ranks when every rank can have its own agent.
// With more ranks than agents every agent is used either way, and spread
// would wait for one offer per rank that this network cannot give until
// its flood reaches the last radius (job.Enough).
func demoStrategy(n, agents int) job.Strategy {
	if n <= agents {
		return job.Spread
	}
	return job.Concentrate
}

// stepError reports a failed step of the command who (demo, bench), or
// the interrupt that caused it.
func stepError(ctx context.Context, who string, err error) error {
	if ctx.Err() != nil {
		return cli.Exit(who+" interrupted", exitInterrupted)
	}
	var coder cli.ExitCoder
	if errors.As(err, &coder) {
		return err
	}
	return cli.Exit(who+": "+err.Error(), 1)
}

// writeDemoSummary says how the job ended, how long it took, and which
// agents ran which ranks.
func writeDemoSummary(w io.Writer, rec job.Record, names map[string]string, took time.Duration) {
	fmt.Fprintf(w, "\njob %s %s in %v (submit to end)", rec.ID, rec.State, took.Round(time.Millisecond))
	if steps := stateSteps(rec.History); steps != "" {
		fmt.Fprintf(w, ": %s", steps)
	}
	fmt.Fprintln(w)
	if rec.Plan == nil {
		return
	}
	fmt.Fprintf(w, "%d ranks on %d agents:\n", rec.Plan.N*rec.Plan.R, len(rec.Plan.Hosts))
	for _, h := range rec.Plan.Hosts {
		name := names[h.Offer.Peer.String()]
		fmt.Fprintf(w, "  %-4s %s  ranks %s\n", name, shortPeer(h.Offer.Peer), procList(h.Procs))
	}
}

// stateSteps is how long the job spent reserving, starting and running.
func stateSteps(h []job.StateChange) string {
	var parts []string
	for i := 1; i < len(h); i++ {
		switch prev := h[i-1].State; prev {
		case job.Reserving, job.Starting, job.Running:
			parts = append(parts, fmt.Sprintf("%s %v", prev, h[i].At.Sub(h[i-1].At).Round(time.Millisecond)))
		}
	}
	return strings.Join(parts, ", ")
}
