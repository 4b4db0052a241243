// Command sim runs the deterministic simulation of a Zorilla network
// (package testnet/sim): agents that decide with the project's own code,
// in virtual time, with faults, replayed exactly from a seed. It prints a
// table of the run, and as its last line the digest of the run's trace.
//
//	go run ./testnet/cmd/sim --agents 10000 --jobs 200 --seed 1
//	go run ./testnet/cmd/sim --agents 300 --jobs 40 --seed 7 --faults crash,partition,loss,slow,skew,liar
//	go run ./testnet/cmd/sim --agents 350 --topology grid5000 --trace /tmp/trace.txt
//	go run ./testnet/cmd/sim --grid5000
//	go run ./testnet/cmd/sim --agents 10000 --jobs 200 --sweep 1000,10000,100000 --svg docs/sim
//
// A run whose invariants fail prints the violation, its seed and the
// command that replays it, and exits 1.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/zorilla-p2p/zorilla/testnet/sim"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the command: it returns the exit status, 2 for a usage error.
func run(args []string, stdout, stderr io.Writer) int {
	cfg, o, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "sim:", err)
		return 2
	}
	if o.grid5000 {
		if err := grid5000(cfg.Seed, stdout); err != nil {
			fmt.Fprintln(stderr, "sim:", err)
			return 1
		}
		return 0
	}
	if o.sweep != "" {
		sizes, err := parseInts(o.sweep)
		if err != nil {
			fmt.Fprintln(stderr, "sim: --sweep:", err)
			return 2
		}
		if err := sweep(cfg, sizes, o.svg, stdout); err != nil {
			fmt.Fprintln(stderr, "sim:", err)
			return 1
		}
		return 0
	}
	w, err := sim.New(cfg)
	if err != nil {
		fmt.Fprintln(stderr, "sim:", err)
		return 2
	}
	if o.trace != "" {
		f, err := os.Create(o.trace)
		if err != nil {
			fmt.Fprintln(stderr, "sim:", err)
			return 1
		}
		defer f.Close()
		b := bufio.NewWriterSize(f, 1<<20)
		defer b.Flush()
		w.Trace(b)
	}
	r := w.Run()
	r.WriteTable(stdout)
	fmt.Fprintf(stdout, "digest %s\n", r.Digest)
	if r.Violation != nil {
		return 1
	}
	return 0
}

// options are the flags that are not the run's configuration.
type options struct {
	trace string // write the trace there
	sweep string // network sizes to sweep over
	svg   string // where the sweep's figures go
	// grid5000 runs the P2P-MPI experiment's jobs instead.
	grid5000 bool
}

func parse(args []string, stderr io.Writer) (sim.Config, options, error) {
	var o options
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	agents := fs.Int("agents", 1000, "agents in the network")
	jobs := fs.Int("jobs", 50, "jobs submitted")
	seed := fs.Uint64("seed", 1, "the run's seed")
	cfg := sim.DefaultConfig(*agents, *jobs, *seed)
	fs.StringVar(&cfg.Topology, "topology", cfg.Topology, "grid5000 or internet")
	fs.IntVar(&cfg.Regions, "regions", cfg.Regions, "internet: regions")
	fs.Float64Var(&cfg.NATShare, "nat", cfg.NATShare, "internet: share of agents behind NAT")
	sizes := fs.String("sizes", "1,4,16,64", "job sizes (n), drawn uniformly")
	fs.Float64Var(&cfg.Mix.Replicated, "replicated", cfg.Mix.Replicated, "share of jobs with r = 2")
	fs.Float64Var(&cfg.Mix.Malleable, "malleable", cfg.Mix.Malleable, "share of jobs malleable (MIN = n/2)")
	fs.Float64Var(&cfg.Mix.Concentrate, "concentrate", cfg.Mix.Concentrate, "share of jobs placed with concentrate")
	fs.Float64Var(&cfg.Mix.Failing, "failing", cfg.Mix.Failing, "share of jobs with a rank that exits 1")
	fs.DurationVar(&cfg.Mix.RunTime, "runtime", cfg.Mix.RunTime, "a rank's run time (±50%)")
	fs.DurationVar(&cfg.Submit, "submit", cfg.Submit, "span over which jobs are submitted")
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "virtual time the run lasts")
	fs.IntVar(&cfg.Rounds, "rounds", cfg.Rounds, "rounds of the overlay's neighbour exchange before the run")
	faults := fs.String("faults", "", "fault kinds on at their default rates: "+strings.Join(sim.FaultKinds(), ",")+", or all")
	rates := map[string]*float64{}
	for _, k := range []string{"crash", "sub-crash", "loss", "spike", "slow", "liars"} {
		rates[k] = fs.Float64(k, -1, "rate of "+k+" (overrides --faults' default)")
	}
	parts := fs.Int("partitions", -1, "site cuts (overrides --faults' default)")
	skew := fs.Duration("skew", -1, "largest clock skew (overrides --faults' default)")
	fs.StringVar(&o.trace, "trace", "", "write the trace to this file")
	fs.StringVar(&o.sweep, "sweep", "", "run at each of these numbers of agents (e.g. 1000,10000,100000), with --jobs per --agents, without and with every fault kind")
	fs.BoolVar(&o.grid5000, "grid5000", false, "run the P2P-MPI Grid'5000 experiment's dry-run jobs (350 agents) and print its table")
	fs.StringVar(&o.svg, "svg", "", "with --sweep: draw the figures in this folder")
	if err := fs.Parse(args); err != nil {
		return cfg, o, err
	}
	cfg.Agents, cfg.Jobs, cfg.Seed = *agents, *jobs, *seed
	var err error
	if cfg.Mix.Sizes, err = sim.ParseSizes(*sizes); err != nil {
		return cfg, o, err
	}
	if *faults != "" && *faults != "none" {
		if cfg.Faults, err = sim.DefaultFaults(strings.Split(*faults, ",")); err != nil {
			return cfg, o, err
		}
	}
	set := func(dst *float64, k string) {
		if v := *rates[k]; v >= 0 {
			*dst = v
		}
	}
	f := &cfg.Faults
	set(&f.Crash, "crash")
	set(&f.SubmitterCrash, "sub-crash")
	set(&f.Loss, "loss")
	set(&f.Spike, "spike")
	set(&f.Slow, "slow")
	set(&f.Liars, "liars")
	if *parts >= 0 {
		f.Partitions = *parts
	}
	if *skew >= 0 {
		f.Skew = *skew
	}
	if f.Down == 0 {
		f.Down = 30 * time.Second
	}
	if f.Cut == 0 {
		f.Cut = 40 * time.Second
	}
	if f.SpikeDelay == 0 {
		f.SpikeDelay = 500 * time.Millisecond
	}
	if f.SlowFactor == 0 {
		f.SlowFactor = 4
	}
	return cfg, o, cfg.Validate()
}
