// Command grid5000 reproduces the co-allocation experiment of P2P-MPI on
// Grid'5000 (Genaud and Rattanapoka, 2008, section 5.1) in one process:
// the 350 hosts of Table 1 run the real agent on go-libp2p's mocknet with
// the paper's RTTs, and dry-run jobs of 100 to 600 processes are submitted
// from a nancy host with concentrate and with spread. It prints the hosts
// and cores allocated per site, the allocation time and the messages per
// job, and writes grid5000.csv and one SVG figure per strategy.
//
//	go run ./testnet/cmd/grid5000 -out /tmp/g5k
//	go run ./testnet/cmd/grid5000 -scale 10 -n 10,20,25,40   # 37 hosts, a quick look
//	go run ./testnet/cmd/grid5000 -scale 3 -cpuprofile /tmp/cpu.out -trace /tmp/trace.out -memprofile /tmp/mem.out
//
// The profiles and the trace cover the jobs only, not the overlay's start:
// -memprofile writes the heap as the jobs begin to FILE.start and as they
// end to FILE (go tool pprof -sample_index=alloc_space -base FILE.start
// BINARY FILE shows what the jobs allocated).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/testnet"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the command: it returns the exit status, 2 for a usage error.
func run(args []string, stdout, stderr io.Writer) int {
	o, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "grid5000:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := experiment(ctx, o, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, "grid5000:", err)
		return 1
	}
	return 0
}

// options are the command's flags: the experiment's config, the output
// folder, and where to write a CPU profile, heap profiles and an
// execution trace of the jobs (empty: none).
type options struct {
	cfg  testnet.Grid5000Config
	out  string
	prof profiles
}

// flags are the values of the command line, before they are checked.
type flags struct {
	scale                  int
	seed                   uint64
	ns, strategies, out    string
	prof                   profiles
	first, grace, converge time.Duration
	radius                 int
	noCollect              bool
}

// parse reads the flags into the experiment's options.
func parse(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("grid5000", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f flags
	fs.IntVar(&f.scale, "scale", 1, "divide every cluster's hosts by this (rounded up); 1 is Table 1's 350 hosts")
	fs.Uint64Var(&f.seed, "seed", 1, "seed: who bootstraps from whom, which nancy host submits")
	fs.StringVar(&f.ns, "n", "", "process counts, comma-separated (default 100..600 by 50, divided by -scale)")
	fs.StringVar(&f.strategies, "strategy", "concentrate,spread", "strategies, comma-separated")
	fs.StringVar(&f.out, "out", ".", "folder for grid5000.csv and the SVG figures")
	fs.DurationVar(&f.first, "first", 0, "flood wait after radius 1, doubling after (default 200ms)")
	fs.DurationVar(&f.grace, "grace", 0, "offer grace once the job is feasible (default 1s at -scale 1 to 3, 300ms from 4)")
	fs.IntVar(&f.radius, "max-radius", 0, "largest flood radius (default 6)")
	fs.DurationVar(&f.converge, "converge", 0, "bound on the wait for the overlay to converge (default 10m; a loaded machine needs more)")
	fs.BoolVar(&f.noCollect, "no-collect", false, "do not collect garbage before each job (a collection over the 350 agents' heap then lands within some jobs)")
	fs.StringVar(&f.prof.cpu, "cpuprofile", "", "write a CPU profile of the jobs (not of the start) to this file")
	fs.StringVar(&f.prof.mem, "memprofile", "", "write the heap profile as the jobs begin to this file + .start, and as they end to this file")
	fs.StringVar(&f.prof.trace, "trace", "", "write an execution trace of the jobs (not of the start) to this file")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	if fs.NArg() > 0 {
		return options{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	cfg, err := f.config()
	return options{cfg: cfg, out: f.out, prof: f.prof}, err
}

// config checks the flags and turns them into the experiment's config.
func (f flags) config() (testnet.Grid5000Config, error) {
	if f.scale < 1 {
		return testnet.Grid5000Config{}, fmt.Errorf("-scale %d: want at least 1", f.scale)
	}
	cfg := testnet.DefaultGrid5000Config(f.scale)
	cfg.Seed, cfg.NoCollect = f.seed, f.noCollect
	var err error
	if f.ns != "" {
		if cfg.Ns, err = parseInts(f.ns); err != nil {
			return cfg, fmt.Errorf("-n: %w", err)
		}
	}
	if cfg.Strategies, err = parseStrategies(f.strategies); err != nil {
		return cfg, fmt.Errorf("-strategy: %w", err)
	}
	for _, d := range []struct {
		v   time.Duration
		set *time.Duration
	}{{f.first, &cfg.Submitter.Schedule.First}, {f.grace, &cfg.Submitter.OfferGrace}, {f.converge, &cfg.Converge}} {
		if d.v < 0 {
			return cfg, fmt.Errorf("negative duration %v", d.v)
		}
		if d.v > 0 {
			*d.set = d.v
		}
	}
	if f.radius < 0 {
		return cfg, fmt.Errorf("-max-radius %d: want at least 1", f.radius)
	}
	if f.radius > 0 {
		cfg.Submitter.Schedule.MaxRadius = f.radius
	}
	return cfg, nil
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > proto.MaxProcs {
			return nil, fmt.Errorf("%q is not a process count in 1..%d", f, proto.MaxProcs)
		}
		out = append(out, n)
	}
	return out, nil
}

func parseStrategies(s string) ([]job.Strategy, error) {
	var out []job.Strategy
	for _, f := range strings.Split(s, ",") {
		st, err := job.ParseStrategy(f)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// experiment starts the simulated grid, runs every job, and writes the
// table, the CSV, the figures and the check of the paper's properties.
func experiment(ctx context.Context, o options, stdout, stderr io.Writer) error {
	cfg, out := o.cfg, o.out
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	hosts := 0
	for _, c := range testnet.ScaleClusters(testnet.Grid5000Clusters(), cfg.Scale) {
		hosts += c.Hosts
	}
	fmt.Fprintf(stderr, "starting %d agents on mocknet and waiting for the overlay...\n", hosts)
	cfg.Progress = func(msg string) { fmt.Fprintln(stderr, msg) }
	t0 := time.Now()
	g, err := testnet.StartGrid5000(ctx, cfg)
	if err != nil {
		return err
	}
	defer g.Close()
	fmt.Fprintf(stderr, "converged in %v; submitting from agent %d (nancy), flood diameter %d\n",
		time.Since(t0).Round(time.Second), g.Submitter, g.Diameter)
	stopProfiles, err := o.prof.start()
	if err != nil {
		return err
	}
	allocs, err := g.Run(ctx, func(a testnet.Allocation) {
		fmt.Fprintf(stderr, "%-11s n=%-3d %v, %d advert msgs, %d reservation msgs, %.2f CPU s\n",
			a.Strategy, a.N, a.Time.Round(time.Millisecond), a.Adverts, a.Reservations(), a.CPU.Seconds())
	})
	err = errors.Join(err, stopProfiles())
	if len(allocs) > 0 { // what was measured before a failure is still worth having
		if werr := testnet.WriteTable(stdout, g.Clusters, allocs); werr != nil {
			return errors.Join(err, werr)
		}
		if werr := writeFiles(out, g.Clusters, cfg.Strategies, allocs); werr != nil {
			return errors.Join(err, werr)
		}
	}
	if err != nil {
		return err
	}
	report(stdout, g.Clusters, allocs)
	return nil
}

// writeFiles writes grid5000.csv and grid5000-<strategy>.svg into dir.
func writeFiles(dir string, cs []testnet.Cluster, strategies []job.Strategy, allocs []testnet.Allocation) error {
	write := func(name string, fn func(io.Writer) error) error {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		if err := fn(f); err != nil {
			_ = f.Close()
			return err
		}
		return f.Close()
	}
	if err := write("grid5000.csv", func(w io.Writer) error { return testnet.WriteCSV(w, cs, allocs) }); err != nil {
		return err
	}
	for _, s := range strategies {
		if err := write("grid5000-"+string(s)+".svg", func(w io.Writer) error { return testnet.WriteSVG(w, cs, s, allocs) }); err != nil {
			return err
		}
	}
	return nil
}

// report checks every allocation against the paper's qualitative results.
func report(w io.Writer, cs []testnet.Cluster, allocs []testnet.Allocation) {
	bad := 0
	for _, a := range allocs {
		if err := testnet.CheckAllocation(a, cs, 0); err != nil {
			bad++
			fmt.Fprintf(w, "%s n=%d: %v\n", a.Strategy, a.N, err)
		}
	}
	fmt.Fprintf(w, "%d of %d allocations follow the paper's rules exactly (true RTT order, site by site)\n", len(allocs)-bad, len(allocs))
}
