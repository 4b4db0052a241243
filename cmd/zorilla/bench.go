package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/zorilla-p2p/zorilla/internal/pingpong"
	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/testnet/bench"
	"github.com/zorilla-p2p/zorilla/testnet/localnet"
)

// Defaults and bounds of the bench.
const (
	// benchSizes: latency is read at 8 B, bandwidth at 1 MiB and 8 MiB
	// (the sizes BENCHMARKS.md reports).
	benchSizes = "8,1M,8M"
	// benchRounds: ten rounds give a median that one slow second of a
	// loaded machine does not move.
	benchRounds    = 10
	maxBenchRounds = 1000
	// maxShmPoll bounds the shm relay chain's polls: a poll longer than a
	// loopback round trip only burns the core.
	maxShmPoll = time.Millisecond
)

func benchCommand() *cli.Command {
	return &cli.Command{
		Name:  "bench",
		Usage: "measure Zorilla against its baselines on this machine",
		Subcommands: []*cli.Command{benchPingpongCommand(), benchEchoCommand(), benchRelayCommand(), benchContentionCommand(),
			benchMalleableCommand(), benchResizeCommand()},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usageErrorf("bench: unknown command %q (see zorilla bench --help)", c.Args().First())
			}
			return cli.ShowSubcommandHelp(c)
		},
	}
}

func benchPingpongCommand() *cli.Command {
	return &cli.Command{
		Name:  "pingpong",
		Usage: "ping-pong between two agents on loopback, against a raw libp2p stream (and NetPIPE)",
		Description: "Starts two agents as separate processes on 127.0.0.1, builds examples/" + bench.Example + " (or runs\n" +
			"--program FILE, which must print the same table on rank 0) and, in each of --rounds rounds,\n" +
			"runs it on two ranks, one per agent, then the same ping-pong on a raw libp2p stream between\n" +
			"this process and a child process with the agents' transport and security, then the relay\n" +
			"chain (the same four processes and hops as two ranks on two agents, with relays that only\n" +
			"copy bytes: the floor of any design where agents relay), then the shm relay chain (the same\n" +
			"with a pair of shared-memory rings between each rank and its relay instead of a unix socket,\n" +
			"the relay writing the rank's ring straight to the stream and reading the stream straight\n" +
			"into the peer's ring: a floor below the relay chain's), then (--netpipe)\n" +
			"NetPIPE over TCP (NPtcp) and over Open MPI's TCP transport (NPmpi), back to back. It prints,\n" +
			"per size, the median one-way latency and bandwidth of each, and the median of the per-round\n" +
			"ratios zorilla / that configuration. Sizes other than the largest must be powers of two:\n" +
			"the ping-pong measures every power of two up to the largest, as NetPIPE does, and a round's\n" +
			"figure for a size is the fastest of three trials, as NetPIPE's is. --colocated adds\n" +
			"two ranks on one agent (shared memory) and NetPIPE between two processes over Open MPI's\n" +
			"shared-memory transport (vader) and over MPICH, in the same rounds; their ratios divide the\n" +
			"co-located zorilla figures.",
		ArgsUsage: " ",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "sizes", Value: benchSizes, Usage: "message `SIZES` reported, comma-separated (8, 64K, 1M...)"},
			&cli.BoolFlag{Name: "all", Usage: "report every power of two from 1 byte to the largest of --sizes"},
			&cli.IntFlag{Name: "rounds", Value: benchRounds, Usage: "rounds, each running every configuration once"},
			&cli.BoolFlag{Name: "raw", Value: true, Usage: "measure the raw libp2p stream too"},
			&cli.BoolFlag{Name: "no-raw", Usage: "do not measure the raw libp2p stream"},
			&cli.BoolFlag{Name: "no-relay", Usage: "do not measure the relay chain"},
			&cli.BoolFlag{Name: "no-shm-relay", Usage: "do not measure the shm relay chain"},
			&cli.DurationFlag{Name: "shm-poll", Value: bench.DefaultShmPoll, Usage: "how long the shm relay chain's waits poll before they sleep (0: at once, woken by the peer)"},
			&cli.BoolFlag{Name: "netpipe", Usage: "measure NetPIPE over TCP and over Open MPI too, where installed"},
			&cli.BoolFlag{Name: "colocated", Usage: "measure two ranks on one agent too (shared memory), against NetPIPE over Open MPI's vader and MPICH where installed"},
			&cli.StringFlag{Name: "program", Usage: "run this `FILE` instead of building examples/" + bench.Example},
			&cli.BoolFlag{Name: "keep", Usage: "keep the agents' data dirs and logs"},
			&cli.DurationFlag{Name: "timeout", Value: 2 * time.Minute, Usage: "wall-clock limit of each ping-pong job"},
		},
		OnUsageError: subUsageError,
		Action:       benchPingpongAction,
	}
}

func benchPingpongAction(c *cli.Context) error {
	cfg, err := benchConfigFrom(c)
	if err != nil {
		return usageError(err)
	}
	ctx, stop := notifyInterrupt(c.Context)
	defer stop()
	net, err := localnet.New("bench", c.App.ErrWriter, "")
	if err != nil {
		return cli.Exit("bench: "+err.Error(), 1)
	}
	defer net.Close(c.Bool("keep"))
	res, err := bench.Run(ctx, cfg, net, c.App.ErrWriter)
	if res != nil && res.Rounds > 0 {
		bench.WriteTable(c.App.Writer, res, cfg.Sizes)
	}
	if err != nil {
		return stepError(ctx, "bench", err)
	}
	return nil
}

// benchConfigFrom is the bench the flags ask for.
func benchConfigFrom(c *cli.Context) (bench.Config, error) {
	cfg := bench.Config{Rounds: c.Int("rounds"), Raw: c.Bool("raw") && !c.Bool("no-raw"),
		Relay: !c.Bool("no-relay"), ShmRelay: !c.Bool("no-shm-relay"), ShmPoll: c.Duration("shm-poll"), NetPIPE: c.Bool("netpipe"), Colocated: c.Bool("colocated"),
		Program: c.String("program"), Timeout: c.Duration("timeout")}
	if c.NArg() > 0 {
		return cfg, fmt.Errorf("bench pingpong takes no arguments, got %q", c.Args().First())
	}
	if c.IsSet("raw") && c.Bool("raw") && c.Bool("no-raw") {
		return cfg, fmt.Errorf("--raw and --no-raw: give one")
	}
	sizes, err := parseBenchSizes(c.String("sizes"), c.Bool("all"))
	if err != nil {
		return cfg, fmt.Errorf("--sizes: %w", err)
	}
	cfg.Sizes = sizes
	switch {
	case cfg.Rounds < 1 || cfg.Rounds > maxBenchRounds:
		return cfg, fmt.Errorf("--rounds: must be 1..%d, got %d", maxBenchRounds, cfg.Rounds)
	case cfg.Timeout < time.Second:
		return cfg, fmt.Errorf("--timeout: must be at least 1s, got %v", cfg.Timeout)
	case cfg.ShmPoll < 0 || cfg.ShmPoll > maxShmPoll:
		return cfg, fmt.Errorf("--shm-poll: must be 0..%v, got %v", maxShmPoll, cfg.ShmPoll)
	}
	if cfg.Program != "" {
		return cfg, checkProgram(cfg.Program)
	}
	return cfg, nil
}

// parseBenchSizes reads the sizes to report: a comma-separated list of
// sizes such as 8, 64K or 1M, each a size the sweep up to the largest
// measures; with all, every size of that sweep. The result is ascending,
// without repeats.
func parseBenchSizes(s string, all bool) ([]int, error) {
	var sizes []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := parseSize(f)
		if err != nil || n > pingpong.MaxSize {
			return nil, fmt.Errorf("%q is not a size of 1 byte to 1G, such as 8, 64K or 8M", f)
		}
		sizes = append(sizes, int(n))
	}
	if len(sizes) == 0 {
		return nil, fmt.Errorf("no sizes in %q", s)
	}
	slices.Sort(sizes)
	sizes = slices.Compact(sizes)
	sweep := pingpong.Sizes(sizes[len(sizes)-1])
	if all {
		return sweep, nil
	}
	for _, n := range sizes {
		if !slices.Contains(sweep, n) {
			return nil, fmt.Errorf("%d is not measured: the ping-pong measures the powers of two up to the largest size (%d) and that size",
				n, sweep[len(sweep)-1])
		}
	}
	return sizes, nil
}

// subUsageError is onUsageError naming the command with its parents
// ("bench pingpong").
func subUsageError(c *cli.Context, err error, _ bool) error {
	name := strings.TrimPrefix(c.Command.HelpName, c.App.Name+" ") // "zorilla bench pingpong"
	if name == "" {
		name = c.Command.Name
	}
	return usageErrorf("%s: %v (see zorilla %s --help)", name, err, name)
}

// checkProgram refuses a program that is not a readable regular file.
func checkProgram(path string) error {
	return checkLocalFiles(job.Description{Executable: path})
}
