package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/zorilla-p2p/zorilla/testnet/docker"
)

// testnetCommand drives a testnet of agent containers on this machine's
// docker engine: up, status, down, and faults to inject.
func testnetCommand() *cli.Command {
	return &cli.Command{
		Name:  "testnet",
		Usage: "run many agents as containers on this machine (docker), with latency between sites",
		Description: `Each site is a docker bridge network; every container is also on a shared "wan"
network, so sites reach each other only there. Each container delays what it
sends to each site by half the RTT to it, by one of three shapers (up --shaper):
  netem      tc netem in each container's namespace, from the host
  transport  the agents delay their own TCP sends (hidden agent flag
             --testnet-delay SUBNET=DELAY,...); TCP only, no helper, no host tools
  nfqueue    iptables NFQUEUE rules and a delay line in a helper container
auto takes netem where the kernel has it, else transport (nfqueue with --quic),
and status says which one a testnet uses. Agents' data dirs are folders of --dir, so
  zorilla submit --data-dir DIR/SITE-0 -n 8 ./prog
submits through a container's agent from the host.`,
		Subcommands: []*cli.Command{
			testnetUpCommand(), testnetStatusCommand(), testnetDownCommand(),
			testnetFaultCommand("kill", "kill containers at once (SIGKILL): hosts that die", (*docker.Testnet).Kill),
			testnetFaultCommand("start", "start killed containers again (same peer ID, latency put back)", (*docker.Testnet).Start),
			testnetFaultCommand("pause", "freeze containers: hosts that hang with their connections open", (*docker.Testnet).Pause),
			testnetFaultCommand("unpause", "thaw paused containers", (*docker.Testnet).Unpause),
			testnetFaultCommand("cut", "disconnect a container from its networks, or a whole site from the wan", (*docker.Testnet).Cut),
			testnetFaultCommand("heal", "reconnect what cut disconnected, with the same addresses", (*docker.Testnet).Heal),
			testnetDelayerCommand(),
		},
	}
}

func testnetFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "name", Value: "zt", EnvVars: []string{"ZORILLA_TESTNET"}, Usage: "the testnet's name: prefix and label of its containers and networks"},
		&cli.StringFlag{Name: "dir", EnvVars: []string{"ZORILLA_TESTNET_DIR"}, Usage: "host `FOLDER` of the state and the agents' data dirs",
			DefaultText: "~/.zorilla-testnet/NAME"},
	}
}

// testnetConfig is the docker package's config for the common flags.
func testnetConfig(c *cli.Context) docker.Config {
	cfg := docker.ForName(c.String("name"))
	if d := c.String("dir"); d != "" {
		abs, err := filepath.Abs(expandHome(d))
		if err == nil {
			d = abs
		}
		cfg.Dir = d
	}
	cfg.Log = c.App.ErrWriter
	return cfg
}

func testnetUpCommand() *cli.Command {
	return &cli.Command{
		Name:      "up",
		Usage:     "build the image and start the agent containers",
		ArgsUsage: " ",
		Flags: append(testnetFlags(),
			&cli.IntFlag{Name: "nodes", Usage: "agent containers (without --sites: spread over --site-count sites)"},
			&cli.StringFlag{Name: "sites", Usage: "site `FILE`: lines like \"nancy 6 hosts x 4 cores\", \"lyon 4 x 2 at 10.5 ms\""},
			&cli.IntFlag{Name: "site-count", Value: 1, Usage: "sites when there is no --sites file"},
			&cli.DurationFlag{Name: "site-rtt", Value: 10 * time.Millisecond, Usage: "without --sites: site i is i times this from site 0"},
			&cli.IntFlag{Name: "cores", Value: 2, Usage: "without --sites: cores (and P) of each agent"},
			&cli.DurationFlag{Name: "local-rtt", Value: time.Millisecond, Usage: "RTT added inside a site"},
			&cli.StringFlag{Name: "shaper", Value: docker.ShaperAuto, Usage: "latency by auto (netem, else transport; nfqueue with --quic), netem, transport, nfqueue or none"},
			&cli.StringFlag{Name: "image", Value: docker.DefaultImage, Usage: "the agent image's tag"},
			&cli.BoolFlag{Name: "no-build", Usage: "use the image as it is"},
			&cli.StringFlag{Name: "src", Usage: "zorilla source `FOLDER` to build the image from",
				DefaultText: "found from the working directory"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "seed of the bootstrap choices"},
			&cli.DurationFlag{Name: "wait", Value: 3 * time.Minute, Usage: "how long to wait for the agents to find neighbours"},
			&cli.BoolFlag{Name: "quic", Usage: "agents listen on QUIC as well as TCP"},
			&cli.StringSliceFlag{Name: "agent-arg", Usage: "extra argument to every agent (repeatable)"},
		),
		OnUsageError: onUsageError,
		Action:       testnetUp,
	}
}

func testnetUp(c *cli.Context) error {
	if c.NArg() > 0 {
		return usageErrorf("testnet up takes no arguments, got %q", c.Args().First())
	}
	layout, err := testnetLayout(c)
	if err != nil {
		return err
	}
	cfg := testnetConfig(c)
	cfg.Image, cfg.LocalRTT, cfg.Shaper, cfg.Seed = c.String("image"), c.Duration("local-rtt"), c.String("shaper"), c.Uint64("seed")
	cfg.AgentArgs, cfg.QUIC = c.StringSlice("agent-arg"), c.Bool("quic")
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if !c.Bool("no-build") {
		spec := docker.ImageSpec{Tag: cfg.Image, Source: c.String("src"), Examples: docker.Examples, Log: c.App.ErrWriter}
		if err := docker.BuildImage(ctx, spec); err != nil {
			return err
		}
	}
	tn, err := docker.Up(ctx, cfg, layout)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, c.Duration("wait"))
	defer cancel()
	want := min(3, layout.Size()-1)
	if err := tn.Await(wctx, "neighbours", time.Second, docker.Converged(want)); err != nil {
		fmt.Fprintf(c.App.ErrWriter, "zorilla: testnet up, but not converged: %v\n", err)
	}
	st, err := tn.Status(ctx)
	if err != nil {
		return err
	}
	st.Print(c.App.Writer)
	first := tn.Containers()[0]
	fmt.Fprintf(c.App.Writer, "submit through %s:\n  zorilla submit --data-dir %s -n 8 PROGRAM\n", first.Name, first.DataDir)
	fmt.Fprintf(c.App.Writer, "web view of %s: %s\n", first.Name, first.WebURL())
	return nil
}

// testnetLayout is the site file, or --nodes spread over --site-count sites.
func testnetLayout(c *cli.Context) (docker.Layout, error) {
	n := c.Int("nodes")
	if path := c.String("sites"); path != "" {
		f, err := os.Open(path)
		if err != nil {
			return docker.Layout{}, usageErrorf("--sites: %v", err)
		}
		defer f.Close()
		l, err := docker.ParseSites(f)
		if err != nil {
			return docker.Layout{}, usageErrorf("--sites %s: %v", path, err)
		}
		if n != 0 && n != l.Size() {
			return docker.Layout{}, usageErrorf("--nodes %d but %s has %d hosts", n, path, l.Size())
		}
		return l, nil
	}
	if n < 1 {
		return docker.Layout{}, usageErrorf("give --nodes N or --sites FILE")
	}
	k := c.Int("site-count")
	if k < 1 || k > n {
		return docker.Layout{}, usageErrorf("--site-count %d: want 1 to --nodes", k)
	}
	l := docker.EvenSites(n, k, c.Int("cores"), c.Duration("site-rtt"))
	if err := l.Validate(); err != nil {
		return docker.Layout{}, usageErrorf("%v", err)
	}
	return l, nil
}

func testnetStatusCommand() *cli.Command {
	return &cli.Command{
		Name:      "status",
		Usage:     "list the containers, their sites, states and neighbour counts",
		ArgsUsage: " ",
		Flags: append(testnetFlags(),
			&cli.BoolFlag{Name: "stats", Usage: "also sample each container's CPU and memory (docker stats)"}),
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			tn, err := docker.Open(testnetConfig(c))
			if err != nil {
				return err
			}
			st, err := tn.Status(c.Context)
			if err != nil {
				return err
			}
			st.Print(c.App.Writer)
			if !c.Bool("stats") {
				return nil
			}
			stats, err := tn.Stats(c.Context)
			if err != nil {
				return err
			}
			docker.PrintStats(c.App.Writer, stats, tn.DelayerName())
			return nil
		},
	}
}

func testnetDownCommand() *cli.Command {
	return &cli.Command{
		Name:      "down",
		Usage:     "remove every container and network of the testnet, and its data dirs (and its image with --images)",
		ArgsUsage: " ",
		Flags: append(testnetFlags(), &cli.BoolFlag{Name: "keep-data", Usage: "keep the agents' data dirs"},
			&cli.BoolFlag{Name: "images", Usage: "also remove the testnet's image (--image) and the untagged images earlier builds left"},
			&cli.StringFlag{Name: "image", Usage: "with --images: the image tag to remove", DefaultText: "the one the testnet was started with, else " + docker.DefaultImage}),
		OnUsageError: onUsageError,
		Action:       testnetDown,
	}
}

func testnetDown(c *cli.Context) error {
	if c.NArg() > 0 {
		return usageErrorf("testnet down takes no arguments, got %q", c.Args().First())
	}
	if c.IsSet("image") && !c.Bool("images") {
		return usageErrorf("testnet down: --image names the image --images removes; give --images too")
	}
	cfg := testnetConfig(c)
	tag := downImage(c, cfg) // before Down removes the state that names it
	r, err := docker.Down(c.Context, cfg, c.Bool("keep-data"))
	if err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "removed %d containers, %d networks, %d data dirs\n", r.Containers, r.Networks, r.DataDirs)
	if !c.Bool("images") {
		return nil
	}
	removed, err := docker.RemoveImages(c.Context, cfg.Docker, tag)
	for _, img := range removed {
		fmt.Fprintf(c.App.Writer, "removed image %s\n", img)
	}
	if err != nil {
		return err
	}
	if len(removed) == 0 {
		fmt.Fprintf(c.App.Writer, "no image %s, no untagged testnet image\n", tag)
	}
	return nil
}

// downImage is the image down --images removes: --image, else the one the
// testnet's state names, else the default.
func downImage(c *cli.Context, cfg docker.Config) string {
	if c.IsSet("image") {
		return c.String("image")
	}
	if tn, err := docker.Open(cfg); err == nil && tn.State().Image != "" {
		return tn.State().Image
	}
	return docker.DefaultImage
}

func testnetFaultCommand(name, usage string, op func(*docker.Testnet, context.Context, string) error) *cli.Command {
	return &cli.Command{
		Name:         name,
		Usage:        usage,
		ArgsUsage:    "TARGET... (a site, or a container: SITE-INDEX)",
		Flags:        testnetFlags(),
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return usageErrorf("testnet %s: name a site or a container (SITE-INDEX)", name)
			}
			tn, err := docker.Open(testnetConfig(c))
			if err != nil {
				return err
			}
			for _, target := range c.Args().Slice() {
				if _, _, err := tn.Resolve(target); err != nil {
					return usageErrorf("testnet %s: %v; targets: %s", name, err, tn.Targets())
				}
			}
			for _, target := range c.Args().Slice() {
				if err := op(tn, c.Context, target); err != nil {
					return err
				}
				fmt.Fprintf(c.App.Writer, "%s %s\n", name, target)
			}
			return nil
		},
	}
}

// testnetDelayerCommand is what the delayer container runs.
func testnetDelayerCommand() *cli.Command {
	return &cli.Command{
		Name:         "delayer",
		Usage:        "delay the agents' packets (runs in the testnet's delayer container)",
		Hidden:       true,
		Flags:        []cli.Flag{&cli.StringFlag{Name: "targets", Required: true, Usage: "the targets `FILE` (delays.json)"}},
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
			defer stop()
			return docker.RunDelayer(ctx, c.String("targets"))
		},
	}
}
