package main

import (
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/urfave/cli/v2"

	"github.com/zorilla-p2p/zorilla/testnet/bench"
)

// benchEchoCommand is the far end of bench pingpong's raw stream, run by
// the bench as a child process: it prints its address, echoes, and ends
// when its stdin closes. With --unix it echoes on a unix socket instead,
// at the end of the relay chain.
func benchEchoCommand() *cli.Command {
	return &cli.Command{
		Name:   "echo",
		Usage:  "the echo end of bench pingpong's raw libp2p stream and relay chain (started by the bench)",
		Hidden: true,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "unix", Usage: "echo on connections to the unix socket `PATH`, not on libp2p streams"},
		},
		OnUsageError: subUsageError,
		Action: func(c *cli.Context) error {
			ctx, stop := notifyInterrupt(c.Context)
			defer stop()
			var err error
			if path := c.String("unix"); path != "" {
				err = bench.ServeEchoUnix(ctx, path, c.App.Reader, c.App.Writer)
			} else {
				err = bench.ServeEcho(ctx, c.App.Reader, c.App.Writer)
			}
			if err != nil {
				return cli.Exit("bench echo: "+err.Error(), 1)
			}
			return nil
		},
	}
}

// benchRelayCommand is one relay of bench pingpong's relay chain, run by
// the bench as a child process. The near relay (--unix, --to) listens on a
// unix socket and relays each connection over a stream to the far relay;
// the far relay (--to-unix) listens on libp2p and relays each stream to a
// connection to the echo's unix socket. Each prints a line when ready (the
// far relay its address, the near relay what its connection negotiated)
// and ends when its stdin closes.
func benchRelayCommand() *cli.Command {
	return &cli.Command{
		Name:   "relay",
		Usage:  "a relay of bench pingpong's relay chain (started by the bench)",
		Hidden: true,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "unix", Usage: "near relay: listen on the unix socket `PATH`"},
			&cli.StringFlag{Name: "to", Usage: "near relay: relay to the far relay at `MULTIADDR`"},
			&cli.StringFlag{Name: "to-unix", Usage: "far relay: relay streams to the unix socket `PATH`"},
		},
		OnUsageError: subUsageError,
		Action:       benchRelayAction,
	}
}

func benchRelayAction(c *cli.Context) error {
	ctx, stop := notifyInterrupt(c.Context)
	defer stop()
	near, to, far := c.String("unix"), c.String("to"), c.String("to-unix")
	var err error
	switch {
	case near != "" && to != "" && far == "":
		if _, perr := peer.AddrInfoFromString(to); perr != nil {
			return usageErrorf("bench relay: --to %q is not a multiaddr with /p2p/: %v", to, perr)
		}
		err = bench.NearRelay(ctx, near, to, c.App.Reader, c.App.Writer, c.App.ErrWriter)
	case near == "" && to == "" && far != "":
		err = bench.FarRelay(ctx, far, c.App.Reader, c.App.Writer, c.App.ErrWriter)
	default:
		return usageErrorf("bench relay: give --unix and --to (near relay), or --to-unix (far relay)")
	}
	if err != nil {
		return cli.Exit("bench relay: "+err.Error(), 1)
	}
	return nil
}
