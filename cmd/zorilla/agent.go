package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	logging "github.com/ipfs/go-log/v2"
	"github.com/urfave/cli/v2"

	"github.com/zorilla-p2p/zorilla/node"
)

// startTimeout bounds the agent's start-up (host, services, bootstrap).
const startTimeout = 30 * time.Second

func agentCommand() *cli.Command {
	return &cli.Command{
		Name:  "agent",
		Usage: "run the agent of this machine until SIGINT or SIGTERM",
		Description: "The agent joins the network through --bootstrap (or waits for others to join it),\n" +
			"keeps its identity in --data-dir, and serves the zorilla commands on <data-dir>/agent.sock.",
		Flags:        agentFlags(),
		OnUsageError: onUsageError,
		Action:       runAgent,
	}
}

func runAgent(c *cli.Context) error {
	if c.NArg() > 0 {
		return usageErrorf("agent takes no arguments, got %q", c.Args().First())
	}
	if err := logging.SetLogLevel("*", c.String("log-level")); err != nil {
		return usageErrorf("--log-level: %v", err)
	}
	cfg, err := agentConfig(c)
	if err != nil {
		return err
	}
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(signals)
	ctx, stop := context.WithCancelCause(c.Context)
	defer stop(nil)
	go func() {
		select {
		case sig := <-signals:
			stop(fmt.Errorf("%v", sig))
		case <-ctx.Done():
		}
	}()
	// SIGHUP is caught from before the socket answers: its default action
	// would end the agent.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	startCtx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	// Said at any log level: an agent that reaches no bootstrap peer
	// otherwise runs silently, alone.
	report := func(msg string) { fmt.Fprintf(c.App.ErrWriter, "zorilla agent: %s\n", msg) }
	n, err := node.New(startCtx, cfg, node.WithReport(report))
	if err != nil {
		return startError(err)
	}
	fmt.Fprintf(c.App.Writer, "zorilla agent %s\ndata dir %s\naccepting jobs from %s\n", n.ID(), cfg.DataDir, trustSummary(n.Trust()))
	fmt.Fprintf(c.App.Writer, "sandbox %s\n", n.Sandbox())
	printWeb(c.App.Writer, c.App.ErrWriter, cfg, n)
	for _, a := range n.Addrs() {
		fmt.Fprintf(c.App.Writer, "listening on %s\n", a)
	}
	if len(cfg.TestnetDelay) > 0 {
		fmt.Fprintf(c.App.Writer, "testnet delay on what is sent over TCP: %s\n", strings.Join(cfg.TestnetDelay, " "))
	}
	go reloadOnHangup(ctx, c, n, hup)
	<-ctx.Done()
	drain(c, n, context.Cause(ctx), signals)
	if err := n.Close(); err != nil {
		return cli.Exit(fmt.Sprintf("agent stopped with errors: %v", err), 1)
	}
	return nil
}

// reloadOnHangup reads the allow and deny lists again on each SIGHUP and
// says in one line what is now in force, or why the old lists stay.
func reloadOnHangup(ctx context.Context, c *cli.Context, n *node.Node, hup <-chan os.Signal) {
	for {
		select {
		case <-hup:
			info, err := n.ReloadTrust()
			if err != nil {
				fmt.Fprintf(c.App.ErrWriter, "zorilla agent: SIGHUP: %v; the lists in force are unchanged\n", err)
				continue
			}
			fmt.Fprintf(c.App.Writer, "SIGHUP: allow and deny lists reloaded: %s\n", trustSummary(info))
		case <-ctx.Done():
			return
		}
	}
}

// drain lets the jobs running here leave before the agent stops (their
// copies elsewhere take over, or they start again elsewhere), within
// --drain-timeout; a second signal stops at once.
func drain(c *cli.Context, n *node.Node, why error, signals <-chan os.Signal) {
	timeout := c.Duration("drain-timeout")
	fmt.Fprintf(c.App.Writer, "stopping (%v): jobs running here leave first, within %v; signal again to stop at once\n", why, timeout)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	go func() {
		select {
		case <-signals:
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := n.Drain(ctx, why.Error()); err != nil {
		fmt.Fprintf(c.App.ErrWriter, "zorilla agent: %v; stopping anyway\n", err)
	}
}

// startError maps the agent's start-up errors to exit codes: what the
// owner gave wrong (a flag, the data dir) is a usage error, exit 2.
func startError(err error) error {
	if errors.Is(err, node.ErrPortInUse) {
		return usageErrorf("%v; give --listen another port, or --reuse-port to share it", err)
	}
	if errors.Is(err, node.ErrInvalidConfig) || errors.Is(err, node.ErrDataDir) {
		return usageError(err)
	}
	return cli.Exit(fmt.Sprintf("agent: %v", err), 1)
}
