package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"

	"github.com/zorilla-p2p/zorilla/internal/pingpong"
)

// echoProtocol is the raw stream's protocol. On it the dialer sends, for
// each size, a header (size, round trips: two big-endian uint32) and then
// the messages one by one; the echo reads each whole message and sends it
// back, as rank 1 of the ping-pong does.
const echoProtocol = protocol.ID("/zorilla/bench/echo/1.0.0")

// echoHeaderLen is the length of the header of a size.
const echoHeaderLen = 8

// maxEchoReps bounds the round trips of one size (pingpong.NextReps gives
// at most 2^20).
const maxEchoReps = 1 << 24

// benchHost is a libp2p host with what the agent's has on the path between
// two agents (node/host.go): the TCP transport, libp2p's default security
// (TLS, then Noise) and muxer (yamux), metrics and relays off. It listens
// on listen, or nowhere when listen is empty.
func benchHost(listen ...string) (host.Host, error) {
	opts := []libp2p.Option{
		libp2p.Transport(tcp.NewTCPTransport),
		libp2p.UserAgent("zorilla-bench"),
		libp2p.DisableMetrics(),
		libp2p.DisableRelay(),
	}
	if len(listen) == 0 {
		opts = append(opts, libp2p.NoListenAddrs)
	} else {
		opts = append(opts, libp2p.ListenAddrStrings(listen...))
	}
	h, err := libp2p.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("libp2p host: %w", err)
	}
	return h, nil
}

// ServeEchoUnix is the echo at the end of the relay chain, run by the
// bench as a child process: it echoes on connections to the unix socket
// path (with shm, on the rings the far relay offers on each), prints path
// on stdout once it listens, and returns when stdin closes or ctx ends.
// Errors of the shm chain's echo are said on stderr.
func ServeEchoUnix(ctx context.Context, path string, shm *ShmRings, stdin io.Reader, stdout, stderr io.Writer) error {
	l, err := listenUnix(path)
	if err != nil {
		return err
	}
	defer l.Close()
	go serveUnix(l, func(conn *net.UnixConn) {
		if shm == nil {
			_ = echoLoop(conn)
			return
		}
		if err := serveShmEcho(conn, shm.Poll); err != nil {
			fmt.Fprintf(stderr, "bench echo: %v\n", err)
		}
	})
	fmt.Fprintln(stdout, path)
	untilStdinCloses(ctx, stdin)
	return nil
}

// ServeEcho is the far end of the raw stream, run by the bench as a child
// process: a host on 127.0.0.1 that echoes; it prints its address on
// stdout and returns when stdin closes or ctx ends.
func ServeEcho(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
	return serveStreams(ctx, stdin, stdout, echoProtocol, serveEcho)
}

// serveStreams is a child's libp2p side: a host on 127.0.0.1 serving
// protocol with handler; it prints the host's address and serves until its
// stdin closes.
func serveStreams(ctx context.Context, stdin io.Reader, stdout io.Writer, proto protocol.ID, handler network.StreamHandler) error {
	h, err := benchHost("/ip4/127.0.0.1/tcp/0")
	if err != nil {
		return err
	}
	defer h.Close()
	h.SetStreamHandler(proto, handler)
	addrs, err := peer.AddrInfoToP2pAddrs(&peer.AddrInfo{ID: h.ID(), Addrs: h.Addrs()})
	if err != nil || len(addrs) == 0 {
		return fmt.Errorf("no address to print (%v)", err)
	}
	fmt.Fprintln(stdout, addrs[0])
	untilStdinCloses(ctx, stdin)
	return nil
}

// serveEcho echoes one stream until the dialer closes it.
func serveEcho(s network.Stream) {
	if err := echoLoop(s); err != nil {
		_ = s.Reset()
		return
	}
	_ = s.Close()
}

// echoLoop reads a header and echoes its messages, until the dialer
// closes its side between two sizes (nil) or breaks the protocol.
func echoLoop(rw io.ReadWriter) error {
	var hdr [echoHeaderLen]byte
	var buf []byte
	for {
		if _, err := io.ReadFull(rw, hdr[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		size, reps := binary.BigEndian.Uint32(hdr[:4]), binary.BigEndian.Uint32(hdr[4:])
		if size < 1 || size > pingpong.MaxSize || reps < 1 || reps > maxEchoReps {
			return fmt.Errorf("bench echo: header asks for %d messages of %d bytes, want 1..%d of 1..%d",
				reps, size, maxEchoReps, pingpong.MaxSize)
		}
		if len(buf) < int(size) {
			buf = make([]byte, size)
		}
		if err := echo(rw, buf[:size], int(reps)); err != nil {
			return err
		}
	}
}

// echo reads each of reps messages whole and sends it back.
func echo(s io.ReadWriter, msg []byte, reps int) error {
	for range reps {
		if _, err := io.ReadFull(s, msg); err != nil {
			return err
		}
		if _, err := s.Write(msg); err != nil {
			return err
		}
	}
	return nil
}

// bounce sends reps messages one after the other, each once the last came
// back, after the header that tells the echo their size and count.
func bounce(s io.ReadWriter, msg []byte, reps int64) (time.Duration, error) {
	var hdr [echoHeaderLen]byte
	binary.BigEndian.PutUint32(hdr[:4], uint32(len(msg)))
	binary.BigEndian.PutUint32(hdr[4:], uint32(reps))
	if _, err := s.Write(hdr[:]); err != nil {
		return 0, err
	}
	start := time.Now()
	for range reps {
		if _, err := s.Write(msg); err != nil {
			return 0, err
		}
		if _, err := io.ReadFull(s, msg); err != nil {
			return 0, err
		}
	}
	return time.Since(start), nil
}

// sweep runs the ping-pong of examples/pingpong on stream s: every size up
// to max, each with the round trips pingpong.NextReps gives, the fastest of
// pingpong.Trials trials.
func sweep(s io.ReadWriter, max int) ([]pingpong.Result, error) {
	buf := make([]byte, max)
	reps := int64(pingpong.FirstReps)
	var out []pingpong.Result
	for _, size := range pingpong.Sizes(max) {
		took, err := pingpong.Best(func() (time.Duration, error) { return bounce(s, buf[:size], reps) })
		if err != nil {
			return out, fmt.Errorf("%d bytes: %w", size, err)
		}
		out = append(out, pingpong.Result{Size: size, Reps: reps, Took: took})
		reps = pingpong.NextReps(reps, took)
	}
	return out, nil
}

// rawTarget is the raw libp2p stream: this process's host dialing an echo
// child process. Both stay up across rounds, as the agents do; each round
// opens a new stream on the same connection.
type rawTarget struct {
	echo *benchChild
	host host.Host
	peer peer.ID
}

func (r *rawTarget) name() string { return "raw libp2p" }

// startRaw starts the echo child of the zorilla binary exe (its log in
// dir) and connects to it.
func startRaw(ctx context.Context, exe, dir string) (*rawTarget, error) {
	echo, addr, err := startChild(exe, filepath.Join(dir, "echo.log"), "echo process", "bench", "echo")
	if err != nil {
		return nil, err
	}
	r := &rawTarget{echo: echo}
	if err := r.connect(ctx, addr); err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

// connect dials the echo child from a host of this process.
func (r *rawTarget) connect(ctx context.Context, addr string) error {
	info, err := peer.AddrInfoFromString(addr)
	if err != nil {
		return fmt.Errorf("the echo process printed %q, not a multiaddr with /p2p/: %w", addr, err)
	}
	if r.host, err = benchHost(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, childStartWait)
	defer cancel()
	if err := r.host.Connect(ctx, *info); err != nil {
		return fmt.Errorf("connect to the echo process at %s: %w", addr, err)
	}
	r.peer = info.ID
	return nil
}

// describe says what the connection to the echo negotiated.
func (r *rawTarget) describe() string { return describeConn(r.host, r.peer) }

// describeConn says what h's connection to p negotiated: "tcp, /tls/1.0.0,
// /yamux/1.0.0".
func describeConn(h host.Host, p peer.ID) string {
	conns := h.Network().ConnsToPeer(p)
	if len(conns) == 0 {
		return "no connection"
	}
	st := conns[0].ConnState()
	return fmt.Sprintf("%s, %s, %s", st.Transport, st.Security, st.StreamMultiplexer)
}

// measure opens a stream to the echo and sweeps sizes up to the largest.
func (r *rawTarget) measure(ctx context.Context, sizes []int) (map[int]figure, error) {
	s, err := r.host.NewStream(ctx, r.peer, echoProtocol)
	if err != nil {
		return nil, fmt.Errorf("open a stream to the echo process: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { _ = s.Reset() })
	defer stop()
	results, err := sweep(s, sizes[len(sizes)-1])
	if err != nil {
		_ = s.Reset()
		return nil, fmt.Errorf("raw stream: %w", err)
	}
	_ = s.Close()
	return figures(results), nil
}

// figures are a sweep's results by size.
func figures(results []pingpong.Result) map[int]figure {
	figs := make(map[int]figure, len(results))
	for _, res := range results {
		row := res.Row()
		figs[res.Size] = figure{latencyUS: row.LatencyUS, mbps: row.MBps}
	}
	return figs
}

// close ends the connection and the echo child.
func (r *rawTarget) close() {
	if r.host != nil {
		_ = r.host.Close()
	}
	r.echo.close()
}
