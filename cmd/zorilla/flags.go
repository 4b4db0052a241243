package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/zorilla-p2p/zorilla/node"
	"github.com/zorilla-p2p/zorilla/overlay"
	"github.com/zorilla-p2p/zorilla/worker/proc"
)

// agentFlags are the agent's settings. Each can also come from a ZORILLA_*
// environment variable; a repeatable flag's variable holds a
// comma-separated list.
func agentFlags() []cli.Flag {
	def := node.DefaultConfig()
	flags := []cli.Flag{
		jobClientFlags()[0], // --data-dir, the same flag the client commands take
		&cli.StringSliceFlag{Name: "listen", EnvVars: []string{"ZORILLA_LISTEN"},
			Value: cli.NewStringSlice(def.Listen...), Usage: "multiaddr to listen on (repeatable)"},
		&cli.BoolFlag{Name: "reuse-port", EnvVars: []string{"ZORILLA_REUSE_PORT"},
			Usage: "start even when another listener holds a --listen TCP port, and share it (SO_REUSEPORT; the kernel splits new connections between the two)"},
		&cli.StringSliceFlag{Name: "bootstrap", EnvVars: []string{"ZORILLA_BOOTSTRAP"},
			Usage: "full multiaddr (ending in /p2p/<peer ID>) of an agent to join through (repeatable), or \"public\": find the network's agents through the public libp2p DHT"},
		&cli.BoolFlag{Name: "mdns", EnvVars: []string{"ZORILLA_MDNS"}, Value: true,
			Usage: "find the network's agents on the local network by multicast DNS (--mdns=false to stay silent)"},
		&cli.StringFlag{Name: "reachability", EnvVars: []string{"ZORILLA_REACHABILITY"}, Value: def.Reachability,
			Usage: "with --bootstrap public: auto (AutoNAT v2 finds out whether others can dial this agent), public or private"},
		&cli.IntFlag{Name: "relay-reservations", EnvVars: []string{"ZORILLA_RELAY_RESERVATIONS"}, Value: def.RelayReservations,
			Usage: "with --bootstrap public, when reachable: agents of the network that may hold a slot on this agent's relay"},
		&cli.IntFlag{Name: "relay-circuits", EnvVars: []string{"ZORILLA_RELAY_CIRCUITS"}, Value: def.RelayCircuits,
			Usage: "relayed connections at once per agent holding a slot (they carry jobs: no data or time limit)"},
		&cli.StringSliceFlag{Name: "public-bootstrap", EnvVars: []string{"ZORILLA_PUBLIC_BOOTSTRAP"},
			Usage: "full multiaddr of a peer of the public DHT to use instead of the built-in list (repeatable)"},
		&cli.StringFlag{Name: "network", EnvVars: []string{"ZORILLA_NETWORK"}, Value: def.Network,
			Usage: "`NAME` of the Zorilla network to join: agents of other networks are never neighbours and never see its jobs (a-z, 0-9, '-')"},
		&cli.IntFlag{Name: "cores", EnvVars: []string{"ZORILLA_CORES"}, Value: def.Cores,
			Usage: "cores this machine offers"},
		&cli.IntFlag{Name: "max-jobs", EnvVars: []string{"ZORILLA_MAX_JOBS"}, Value: def.MaxJobs,
			Usage: "J: applications running or reserved at once"},
		&cli.IntFlag{Name: "max-procs", EnvVars: []string{"ZORILLA_MAX_PROCS"},
			Usage: "P: processes of one application on this machine", DefaultText: "--cores"},
		&cli.StringFlag{Name: "memory", EnvVars: []string{"ZORILLA_MEMORY"}, Value: formatSize(def.Memory),
			Usage: "memory offered, e.g. 2G or 512M", DefaultText: "all of it"},
		&cli.IntFlag{Name: "max-priority", EnvVars: []string{"ZORILLA_MAX_PRIORITY"},
			Usage: "highest job priority (submit --priority) honoured from a submitter without a --priority-cap; a job of higher honoured priority may swap out or freeze lower ones here (-100..100)"},
		&cli.DurationFlag{Name: "max-swap-slice", EnvVars: []string{"ZORILLA_MAX_SWAP_SLICE"},
			Usage: "the longest a job runs here (its submit --swap-slice, capped) before a job of equal priority waiting for its memory may swap it out by checkpoint; 0: no cap", DefaultText: "no cap"},
		&cli.StringFlag{Name: "swap-policy", EnvVars: []string{"ZORILLA_SWAP_POLICY"}, Value: "sequential",
			Usage: "how a job swapped out by checkpoint gives way here: sequential (the jobs taking its place start once it has ended and freed its memory) or overlapped (they start at once, while it checkpoints: a shorter switch, both in memory meanwhile)"},
		&cli.StringSliceFlag{Name: "priority-cap", EnvVars: []string{"ZORILLA_PRIORITY_CAP"},
			Usage: "`PEER=N`: the highest priority honoured from the submitter PEER (repeatable; overrides --max-priority for it)"},
		&cli.StringSliceFlag{Name: "label", EnvVars: []string{"ZORILLA_LABEL", "ZORILLA_LABELS"},
			Usage: "label jobs may require, e.g. gpu or site=nancy (repeatable)"},
		&cli.StringFlag{Name: "allow", EnvVars: []string{"ZORILLA_ALLOW"}, TakesFile: true,
			Usage: "file of the submitters' peer IDs allowed to run jobs here, one per line; with none given, <data-dir>/allow\n" +
				"\tif it exists. Only this agent and the submitters listed are accepted (`zorilla trust add` edits the list;\n" +
				"\tSIGHUP or `zorilla trust reload` reads it again)"},
		&cli.StringFlag{Name: "deny", EnvVars: []string{"ZORILLA_DENY"}, TakesFile: true,
			Usage: "file of submitter peer IDs never accepted, even with --open (with none given, <data-dir>/deny if it exists)"},
		&cli.BoolFlag{Name: "open", EnvVars: []string{"ZORILLA_OPEN"},
			Usage: "accept jobs from any submitter not denied, ignoring the allow list (testnets, demos)"},
		&cli.StringFlag{Name: "run-as", EnvVars: []string{"ZORILLA_RUN_AS"}, Value: def.RunAs,
			Usage: "when the agent runs as root, who jobs run as: auto (a user ID of their own per job, from --uid-range), a `USER` (name, UID or UID:GID), or none (root)"},
		&cli.StringFlag{Name: "uid-range", EnvVars: []string{"ZORILLA_UID_RANGE"}, Value: proc.DefaultUIDRange.String(),
			Usage: "`FIRST-LAST` user IDs that --run-as auto hands to jobs; no user may own them"},
		&cli.StringFlag{Name: "job-network", EnvVars: []string{"ZORILLA_JOB_NETWORK"}, Value: def.JobNetwork,
			Usage: "isolated: each job process gets a network namespace with only loopback (MPI goes through the agent); host: the host's network"},
		&cli.DurationFlag{Name: "drain-timeout", EnvVars: []string{"ZORILLA_DRAIN_TIMEOUT"}, Value: 15 * time.Second,
			Usage: "on SIGTERM or SIGINT, how long jobs running here get to leave (replicas take over, others start again elsewhere) before the agent stops"},
		&cli.StringFlag{Name: "log-level", EnvVars: []string{"ZORILLA_LOG_LEVEL"}, Value: "error",
			Usage: "debug, info, warn or error"},
		// Set by `zorilla testnet up` when the kernel has no netem.
		&cli.StringSliceFlag{Name: "testnet-delay", EnvVars: []string{"ZORILLA_TESTNET_DELAY"}, Hidden: true,
			Usage: "testnets only: delay what is sent over TCP to SUBNET by DELAY, e.g. 10.90.1.0/24=5ms (repeatable; TCP only)"},
	}
	return append(append(append(flags, webFlag()), abuseFlags()...), gangFlags()...)
}

// agentConfig builds the agent's config from its flags. Bad values are
// usage errors (exit 2); node.New checks the rest.
func agentConfig(c *cli.Context) (node.Config, error) {
	cfg := node.DefaultConfig()
	cfg.DataDir = expandHome(c.String("data-dir"))
	if cfg.DataDir == "" {
		return cfg, usageErrorf("--data-dir is empty")
	}
	if d := c.Duration("drain-timeout"); d < 0 {
		return cfg, usageErrorf("--drain-timeout: must not be negative, got %v", d)
	}
	cfg.Network = c.String("network")
	if err := overlay.CheckNetwork(cfg.Network); err != nil {
		return cfg, usageErrorf("--network: %v", err)
	}
	cfg.Listen = c.StringSlice("listen")
	cfg.ReusePort = c.Bool("reuse-port")
	cfg.Bootstrap = trimAll(c.StringSlice("bootstrap"))
	cfg.PublicBootstrap = trimAll(c.StringSlice("public-bootstrap"))
	cfg.MDNS = c.Bool("mdns")
	cfg.Reachability = c.String("reachability")
	cfg.RelayReservations, cfg.RelayCircuits = c.Int("relay-reservations"), c.Int("relay-circuits")
	cfg.Cores = c.Int("cores")
	cfg.MaxJobs = c.Int("max-jobs")
	cfg.MaxProcs = c.Int("max-procs")
	if !c.IsSet("max-procs") {
		cfg.MaxProcs = cfg.Cores
	}
	mem, err := parseSize(c.String("memory"))
	if err != nil {
		return cfg, usageErrorf("--memory: %v", err)
	}
	cfg.Memory = mem
	cfg.Labels = trimAll(c.StringSlice("label"))
	if err := priorityConfig(c, &cfg); err != nil {
		return cfg, err
	}
	cfg.AllowFile, cfg.DenyFile = expandHome(c.String("allow")), expandHome(c.String("deny"))
	cfg.Open = c.Bool("open")
	cfg.RunAs, cfg.UIDRange, cfg.JobNetwork = c.String("run-as"), c.String("uid-range"), c.String("job-network")
	cfg.TestnetDelay = trimAll(c.StringSlice("testnet-delay"))
	if err := abuseConfig(c, &cfg); err != nil {
		return cfg, err
	}
	if err := webConfig(c, &cfg); err != nil {
		return cfg, err
	}
	if err := gangConfig(c, &cfg); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// trimAll drops spaces around each item (from "a, b" in an env var) and
// empty items.
func trimAll(list []string) []string {
	var out []string
	for _, s := range list {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// parseSize reads a byte count: a number with an optional binary unit,
// K, M, G or T (KiB... and KB... mean the same), e.g. 2G, 1.5G, 512MiB.
func parseSize(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "I")
	mult := 1.0
	if n := len(t); n > 0 {
		if i := strings.IndexByte("KMGT", t[n-1]); i >= 0 {
			mult = math.Pow(1024, float64(i+1))
			t = t[:n-1]
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
	if err != nil || math.IsNaN(v) || v*mult < 1 || v*mult >= math.MaxInt64 {
		return 0, fmt.Errorf("%q is not a size such as 2G or 512M", s)
	}
	return int64(v * mult), nil
}

// formatSize writes a byte count in the largest unit that divides it.
func formatSize(n int64) string {
	for i, u := range []string{"T", "G", "M", "K"} {
		if d := int64(1) << (10 * (4 - i)); n >= d && n%d == 0 {
			return strconv.FormatInt(n/d, 10) + u
		}
	}
	return strconv.FormatInt(n, 10)
}
