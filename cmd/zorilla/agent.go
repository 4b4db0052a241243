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
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	startCtx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	n, err := node.New(startCtx, cfg)
	if err != nil {
		return startError(err)
	}
	fmt.Fprintf(c.App.Writer, "zorilla agent %s\ndata dir %s\n", n.ID(), cfg.DataDir)
	for _, a := range n.Addrs() {
		fmt.Fprintf(c.App.Writer, "listening on %s\n", a)
	}
	if len(cfg.TestnetDelay) > 0 {
		fmt.Fprintf(c.App.Writer, "testnet delay on what is sent over TCP: %s\n", strings.Join(cfg.TestnetDelay, " "))
	}
	<-ctx.Done()
	fmt.Fprintln(c.App.Writer, "stopping")
	if err := n.Close(); err != nil {
		return cli.Exit(fmt.Sprintf("agent stopped with errors: %v", err), 1)
	}
	return nil
}

// startError maps the agent's start-up errors to exit codes: what the
// owner gave wrong (a flag, the data dir) is a usage error, exit 2.
func startError(err error) error {
	if errors.Is(err, node.ErrInvalidConfig) || errors.Is(err, node.ErrDataDir) {
		return usageError(err)
	}
	return cli.Exit(fmt.Sprintf("agent: %v", err), 1)
}
