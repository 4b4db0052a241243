package bench

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

// NearRelay is the near relay of the chain, run by the bench as a child
// process: it relays each connection to the unix socket path over a
// stream to the far relay at the multiaddr to (with /p2p/); with shm, it
// offers each connection rings and relays those (the shm relay chain).
// Once ready it prints what its connection to the far relay negotiated on
// stdout; it returns when stdin closes or ctx ends. Streams it cannot open
// are said on stderr.
func NearRelay(ctx context.Context, path, to string, shm *ShmRings, stdin io.Reader, stdout, stderr io.Writer) error {
	far, err := peer.AddrInfoFromString(to)
	if err != nil {
		return fmt.Errorf("%q is not a multiaddr with /p2p/: %w", to, err)
	}
	h, err := benchHost()
	if err != nil {
		return err
	}
	defer h.Close()
	dialCtx, cancel := context.WithTimeout(ctx, childStartWait)
	err = h.Connect(dialCtx, *far)
	cancel()
	if err != nil {
		return fmt.Errorf("connect to %s: %w", to, err)
	}
	l, err := listenUnix(path)
	if err != nil {
		return err
	}
	defer l.Close()
	go serveUnix(l, func(conn *net.UnixConn) {
		var side *shmSide
		if shm != nil {
			var err error
			if side, err = offerRings(conn, shm.Poll); err != nil {
				fmt.Fprintf(stderr, "bench relay: %v\n", err)
				return
			}
		}
		s, err := h.NewStream(ctx, far.ID, relayProtocol)
		if err != nil {
			fmt.Fprintf(stderr, "bench relay: open a stream to %s: %v\n", to, err)
			if side != nil {
				side.release()
			}
			return
		}
		relayConn(conn, side, s)
	})
	fmt.Fprintln(stdout, describeConn(h, far.ID)) // ready
	untilStdinCloses(ctx, stdin)
	return nil
}

// FarRelay is the far relay of the chain, run by the bench as a child
// process: it listens on libp2p and relays each stream to a connection to
// the unix socket path; with shm, to rings it offers on that connection.
// It prints its address on stdout and returns when stdin closes or ctx
// ends.
func FarRelay(ctx context.Context, path string, shm *ShmRings, stdin io.Reader, stdout, stderr io.Writer) error {
	return serveStreams(ctx, stdin, stdout, relayProtocol, func(s network.Stream) {
		conn, err := dialUnix(path)
		if err != nil {
			fmt.Fprintf(stderr, "bench relay: %v\n", err)
			_ = s.Reset()
			return
		}
		defer conn.Close()
		var side *shmSide
		if shm != nil {
			if side, err = offerRings(conn, shm.Poll); err != nil {
				fmt.Fprintf(stderr, "bench relay: %v\n", err)
				_ = s.Reset()
				return
			}
		}
		relayConn(conn, side, s)
	})
}

// relayConn relays between s and the unix connection conn, or the rings
// side offered on it.
func relayConn(conn *net.UnixConn, side *shmSide, s network.Stream) {
	if side != nil {
		spliceShm(side, s)
		return
	}
	splice(conn, s)
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

// chain is the three children of a relay chain: this process -> near relay
// -> far relay -> echo, each a child process that stays up across rounds.
type chain struct {
	echo, far, near *benchChild
	path            string // the near relay's socket
	conn            string // what the relays' connection negotiated
}

// startChain starts the echo and the two relays, children of the zorilla
// binary exe with extra arguments each, their logs and sockets in dir
// named from file; what names them in errors starts with label.
func startChain(exe, dir, file, label string, extra ...string) (_ chain, err error) {
	var c chain
	defer func() {
		if err != nil {
			c.close()
		}
	}()
	child := func(what, log string, args ...string) (*benchChild, string, error) {
		return startChild(exe, filepath.Join(dir, file+"-"+log+".log"), label+what, append(args, extra...)...)
	}
	echoPath := filepath.Join(dir, file+"-echo.sock")
	if c.echo, _, err = child("relay chain's echo process", "echo", "bench", "echo", "--unix", echoPath); err != nil {
		return chain{}, err
	}
	var farAddr string
	if c.far, farAddr, err = child("far relay", "far", "bench", "relay", "--to-unix", echoPath); err != nil {
		return chain{}, err
	}
	c.path = filepath.Join(dir, file+"-near.sock")
	if c.near, c.conn, err = child("near relay", "near", "bench", "relay", "--unix", c.path, "--to", farAddr); err != nil {
		return chain{}, err
	}
	return c, nil
}

func (c *chain) describe() string { return c.conn }

// close ends the three children, nearest first.
func (c *chain) close() {
	c.near.close()
	c.far.close()
	c.echo.close()
}

// relayTarget is the relay chain; each round connects anew.
type relayTarget struct{ chain }

func (r *relayTarget) name() string { return "relay chain" }

// startRelay starts the relay chain's children, their logs and sockets in
// dir.
func startRelay(exe, dir string) (*relayTarget, error) {
	c, err := startChain(exe, dir, "relay", "")
	if err != nil {
		return nil, err
	}
	return &relayTarget{c}, nil
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
