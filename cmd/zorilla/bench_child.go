package main

import (
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/urfave/cli/v2"

	"github.com/zorilla-p2p/zorilla/testnet/bench"
)

// benchEchoCommand is the far end of bench pingpong's raw stream, run by
// the bench as a child process: it prints its address, echoes, and ends
// when its stdin closes. With --unix it echoes on a unix socket instead,
// at the end of the relay chain; with --shm too, on the rings passed on
// each connection, at the end of the shm relay chain.
func benchEchoCommand() *cli.Command {
	return &cli.Command{
		Name:   "echo",
		Usage:  "the echo end of bench pingpong's raw libp2p stream and relay chain (started by the bench)",
		Hidden: true,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "unix", Usage: "echo on connections to the unix socket `PATH`, not on libp2p streams"},
			shmFlag, shmPollFlag,
		},
		OnUsageError: subUsageError,
		Action: func(c *cli.Context) error {
			ctx, stop := notifyInterrupt(c.Context)
			defer stop()
			shm, err := shmRingsFrom(c)
			if err != nil {
				return usageErrorf("bench echo: %v", err)
			}
			if path := c.String("unix"); path != "" {
				err = bench.ServeEchoUnix(ctx, path, shm, c.App.Reader, c.App.Writer, c.App.ErrWriter)
			} else if shm != nil {
				return usageErrorf("bench echo: --shm needs --unix")
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
// and ends when its stdin closes. With --shm both pass shared-memory rings
// on their unix connections and relay those (the shm relay chain).
func benchRelayCommand() *cli.Command {
	return &cli.Command{
		Name:   "relay",
		Usage:  "a relay of bench pingpong's relay chain (started by the bench)",
		Hidden: true,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "unix", Usage: "near relay: listen on the unix socket `PATH`"},
			&cli.StringFlag{Name: "to", Usage: "near relay: relay to the far relay at `MULTIADDR`"},
			&cli.StringFlag{Name: "to-unix", Usage: "far relay: relay streams to the unix socket `PATH`"},
			shmFlag, shmPollFlag,
		},
		OnUsageError: subUsageError,
		Action:       benchRelayAction,
	}
}

func benchRelayAction(c *cli.Context) error {
	ctx, stop := notifyInterrupt(c.Context)
	defer stop()
	near, to, far := c.String("unix"), c.String("to"), c.String("to-unix")
	shm, err := shmRingsFrom(c)
	if err != nil {
		return usageErrorf("bench relay: %v", err)
	}
	switch {
	case near != "" && to != "" && far == "":
		if _, perr := peer.AddrInfoFromString(to); perr != nil {
			return usageErrorf("bench relay: --to %q is not a multiaddr with /p2p/: %v", to, perr)
		}
		err = bench.NearRelay(ctx, near, to, shm, c.App.Reader, c.App.Writer, c.App.ErrWriter)
	case near == "" && to == "" && far != "":
		err = bench.FarRelay(ctx, far, shm, c.App.Reader, c.App.Writer, c.App.ErrWriter)
	default:
		return usageErrorf("bench relay: give --unix and --to (near relay), or --to-unix (far relay)")
	}
	if err != nil {
		return cli.Exit("bench relay: "+err.Error(), 1)
	}
	return nil
}

// The children's flags of the shm relay chain.
var (
	shmFlag     = &cli.BoolFlag{Name: "shm", Usage: "pass shared-memory rings on the unix connections, and move the bytes through those"}
	shmPollFlag = &cli.DurationFlag{Name: "poll", Value: bench.DefaultShmPoll, Usage: "with --shm, how long a wait on a ring polls before it sleeps"}
)

// shmRingsFrom is what --shm and --poll ask for: nil without --shm.
func shmRingsFrom(c *cli.Context) (*bench.ShmRings, error) {
	if !c.Bool("shm") {
		if c.IsSet("poll") {
			return nil, fmt.Errorf("--poll needs --shm")
		}
		return nil, nil
	}
	if p := c.Duration("poll"); p < 0 || p > maxShmPoll {
		return nil, fmt.Errorf("--poll: must be 0..%v, got %v", maxShmPoll, p)
	}
	return &bench.ShmRings{Poll: c.Duration("poll")}, nil
}
