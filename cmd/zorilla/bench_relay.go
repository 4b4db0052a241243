package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"sync"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/urfave/cli/v2"
)

// The relay chain is the floor of any design where ranks talk through their
// agents: the same four processes and hops as a message between two ranks
// on two agents (process -> unix socket -> relay -> TCP+TLS+yamux -> relay
// -> unix socket -> process), with relays that only copy bytes (no frames,
// routing, flow control or matching). zorilla's figures over the relay
// chain's are what the agents and the library cost on top of the hops.

// relayProtocol is the stream between the chain's two relays.
const relayProtocol = protocol.ID("/zorilla/bench/relay/1.0.0")

// relayBuffer is the copy buffer of each direction of a relay. A read
// returns what has arrived, so bytes move on as they come (cut-through).
const relayBuffer = 512 << 10

// unixSocketBuffer is asked of the kernel for every unix socket of the
// chain, as the agents and ranks ask for theirs (mpi.socketBuffer,
// router.Config.SocketBuffer).
const unixSocketBuffer = 4 << 20

// benchRelayCommand is one relay of the chain, run by the bench as a child
// process. The near relay (--unix, --to) listens on a unix socket and
// relays each connection over a stream to the far relay; the far relay
// (--to-unix) listens on libp2p and relays each stream to a connection to
// the echo's unix socket. Each prints a line when ready (the far relay its
// address, the near relay what its connection negotiated) and ends when its
// stdin closes.
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
	switch {
	case near != "" && to != "" && far == "":
		return nearRelay(ctx, c, near, to)
	case near == "" && to == "" && far != "":
		return farRelay(ctx, c, far)
	}
	return usageErrorf("bench relay: give --unix and --to (near relay), or --to-unix (far relay)")
}

// nearRelay relays connections to the unix socket path over streams to the
// far relay at addr.
func nearRelay(ctx context.Context, c *cli.Context, path, addr string) error {
	info, err := peer.AddrInfoFromString(addr)
	if err != nil {
		return usageErrorf("bench relay: --to %q is not a multiaddr with /p2p/: %v", addr, err)
	}
	h, err := benchHost()
	if err != nil {
		return cli.Exit("bench relay: "+err.Error(), 1)
	}
	defer h.Close()
	dialCtx, cancel := context.WithTimeout(ctx, agentStartWait)
	err = h.Connect(dialCtx, *info)
	cancel()
	if err != nil {
		return cli.Exit(fmt.Sprintf("bench relay: connect to %s: %v", addr, err), 1)
	}
	l, err := listenUnix(path)
	if err != nil {
		return cli.Exit("bench relay: "+err.Error(), 1)
	}
	defer l.Close()
	go serveUnix(l, func(conn *net.UnixConn) {
		s, err := h.NewStream(ctx, info.ID, relayProtocol)
		if err != nil {
			fmt.Fprintf(c.App.ErrWriter, "bench relay: open a stream to %s: %v\n", addr, err)
			return
		}
		splice(conn, s)
	})
	fmt.Fprintln(c.App.Writer, describeConn(h, info.ID)) // ready
	untilStdinCloses(ctx, c.App.Reader)
	return nil
}

// farRelay relays streams to connections to the unix socket path.
func farRelay(ctx context.Context, c *cli.Context, path string) error {
	return serveStreams(ctx, c, "bench relay", relayProtocol, func(s network.Stream) {
		conn, err := dialUnix(path)
		if err != nil {
			fmt.Fprintf(c.App.ErrWriter, "bench relay: %v\n", err)
			_ = s.Reset()
			return
		}
		splice(conn, s)
	})
}

// splice copies both ways between a unix connection and a stream until
// both directions end, then closes both.
func splice(conn *net.UnixConn, s network.Stream) {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		if pump(s, conn) == nil {
			_ = s.CloseWrite()
		} else {
			_ = s.Reset()
		}
	}()
	go func() {
		defer wg.Done()
		if pump(conn, s) == nil {
			_ = conn.CloseWrite()
		} else {
			_ = conn.Close()
		}
	}()
	wg.Wait()
	_ = conn.Close()
	_ = s.Close()
}

// pump copies src to dst until src ends (nil) or either fails.
func pump(dst io.Writer, src io.Reader) error {
	buf := make([]byte, relayBuffer)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return werr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// listenUnix listens on the unix socket path.
func listenUnix(path string) (*net.UnixListener, error) {
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	return l, nil
}

// serveUnix runs serve on each connection to l, with the chain's socket
// buffers, until l is closed.
func serveUnix(l *net.UnixListener, serve func(*net.UnixConn)) {
	for {
		conn, err := l.AcceptUnix()
		if err != nil {
			return
		}
		_ = conn.SetWriteBuffer(unixSocketBuffer)
		_ = conn.SetReadBuffer(unixSocketBuffer)
		go func() {
			defer conn.Close()
			serve(conn)
		}()
	}
}

// dialUnix connects to the unix socket path, with the chain's socket
// buffers.
func dialUnix(path string) (*net.UnixConn, error) {
	conn, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", path, err)
	}
	_ = conn.SetWriteBuffer(unixSocketBuffer)
	_ = conn.SetReadBuffer(unixSocketBuffer)
	return conn, nil
}

// relayTarget is the relay chain: this process -> near relay -> far relay
// -> echo, each a child process that stays up across rounds; each round
// connects anew.
type relayTarget struct {
	echo, far, near *benchChild
	path            string // the near relay's socket
	conn            string // what the relays' connection negotiated
}

func (r *relayTarget) name() string { return "relay chain" }

// startRelay starts the echo and the two relays, their logs and sockets in
// dir.
func startRelay(dir string) (_ *relayTarget, err error) {
	r := &relayTarget{}
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	echoPath := filepath.Join(dir, "relay-echo.sock")
	if r.echo, _, err = startChild(filepath.Join(dir, "relay-echo.log"), "relay chain's echo process",
		"bench", "echo", "--unix", echoPath); err != nil {
		return nil, err
	}
	var farAddr string
	if r.far, farAddr, err = startChild(filepath.Join(dir, "relay-far.log"), "far relay",
		"bench", "relay", "--to-unix", echoPath); err != nil {
		return nil, err
	}
	r.path = filepath.Join(dir, "relay-near.sock")
	if r.near, r.conn, err = startChild(filepath.Join(dir, "relay-near.log"), "near relay",
		"bench", "relay", "--unix", r.path, "--to", farAddr); err != nil {
		return nil, err
	}
	return r, nil
}

// measure connects to the near relay and sweeps sizes up to the largest.
func (r *relayTarget) measure(ctx context.Context, sizes []int) (map[int]figure, error) {
	conn, err := dialUnix(r.path)
	if err != nil {
		return nil, fmt.Errorf("relay chain: %w", err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	results, err := sweep(conn, sizes[len(sizes)-1])
	if err != nil {
		return nil, fmt.Errorf("relay chain: %w", err)
	}
	return figures(results), nil
}

func (r *relayTarget) describe() string { return r.conn }

// close ends the three children, nearest first.
func (r *relayTarget) close() {
	r.near.close()
	r.far.close()
	r.echo.close()
}
