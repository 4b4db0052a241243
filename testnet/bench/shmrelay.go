package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"golang.org/x/sys/unix"
)

// The shm relay chain is the relay chain with shared memory where the
// relay chain has unix sockets: each rank and its relay share a pair of
// rings (shmring.go), one each way; the relay's goroutines hand the
// stream slices of the rank's ring to write, and read the stream into the
// peer rank's ring. It measures how far below the relay chain's floor a
// design goes whose agents relay without a socket hop: rank -> ring ->
// relay -> TCP+TLS+yamux -> relay -> ring -> rank. The unix socket that
// passes the rings stays open as each side's sign of life.

// DefaultShmPoll is how long a side of an shm ring polls before it
// sleeps: 0, a sleep at once with the peer's wake as a doorbell. On two
// cores shared by four processes a poll takes the core the relay's TLS or
// the peer's copy needs; a wait there is as long as a loopback TCP hop
// anyway, against which a futex wake is small.
const DefaultShmPoll = 0

// ShmRings, given to a relay or an echo, makes it pass shared-memory rings
// over its unix connections instead of sending bytes through them.
type ShmRings struct {
	Poll time.Duration // each wait polls this long, then sleeps
}

// shmSide is one process's side of a ring pair: it reads in and writes
// out. gone closes when the unix connection to the other process ends
// (it closed it, died, or this side did).
type shmSide struct {
	conn    *net.UnixConn
	in, out *shmRing
	gone    chan struct{}
	watched sync.WaitGroup
}

// offerRings is the relay's side of the handshake: it creates the two
// rings, sends them to the rank on conn (rank to relay first) and maps its
// own side.
func offerRings(conn *net.UnixConn, poll time.Duration) (*shmSide, error) {
	up, err := createRing("zorilla-bench-up", shmRingCap)
	if err != nil {
		return nil, err
	}
	defer up.Close()
	down, err := createRing("zorilla-bench-down", shmRingCap)
	if err != nil {
		return nil, err
	}
	defer down.Close()
	rights := unix.UnixRights(int(up.Fd()), int(down.Fd()))
	if _, _, err := conn.WriteMsgUnix([]byte{1}, rights, nil); err != nil {
		return nil, fmt.Errorf("send the rings: %w", err)
	}
	return mapSide(conn, int(up.Fd()), int(down.Fd()), poll)
}

// acceptRings is the rank's side of the handshake: it receives the two
// rings on conn and maps them.
func acceptRings(conn *net.UnixConn, poll time.Duration) (*shmSide, error) {
	buf, oob := make([]byte, 1), make([]byte, unix.CmsgSpace(2*4))
	n, oobn, _, _, err := conn.ReadMsgUnix(buf, oob)
	if err != nil {
		return nil, fmt.Errorf("receive the rings: %w", err)
	}
	var fds []int
	if msgs, perr := unix.ParseSocketControlMessage(oob[:oobn]); perr == nil {
		for _, m := range msgs {
			if got, err := unix.ParseUnixRights(&m); err == nil {
				fds = append(fds, got...)
			}
		}
	}
	defer func() {
		for _, fd := range fds {
			_ = unix.Close(fd)
		}
	}()
	if n != 1 || len(fds) != 2 {
		return nil, fmt.Errorf("receive the rings: %d bytes and %d descriptors, want 1 and 2", n, len(fds))
	}
	return mapSide(conn, fds[1], fds[0], poll)
}

// mapSide maps the rings in and out (the files may be closed afterwards)
// and watches conn.
func mapSide(conn *net.UnixConn, in, out int, poll time.Duration) (*shmSide, error) {
	s := &shmSide{conn: conn, gone: make(chan struct{})}
	var err error
	if s.in, err = mapRing(in, poll, s.gone); err != nil {
		return nil, err
	}
	if s.out, err = mapRing(out, poll, s.gone); err != nil {
		s.in.unmap()
		return nil, err
	}
	s.watched.Add(1)
	go s.watch()
	return s, nil
}

// watch closes gone when conn ends (nothing else comes on it) and wakes
// this side's waits, which then look at gone.
func (s *shmSide) watch() {
	defer s.watched.Done()
	_, _ = io.Copy(io.Discard, s.conn)
	close(s.gone)
	s.in.wakeSelf()
	s.out.wakeSelf()
}

func (s *shmSide) Read(p []byte) (int, error)  { return s.in.Read(p) }
func (s *shmSide) Write(p []byte) (int, error) { return s.out.Write(p) }

// release closes conn and unmaps the rings once nothing waits on them.
func (s *shmSide) release() {
	_ = s.conn.Close()
	s.watched.Wait()
	s.in.unmap()
	s.out.unmap()
}

// hangUp is a rank's end of a pair: it closes its writing side, reads
// until the relay closes its own (what it still sends is dropped), then
// releases the pair. It returns early when the relay goes.
func (s *shmSide) hangUp() error {
	s.out.closeWrite()
	var err error
	for {
		var b []byte
		if b, err = s.in.readable(); err != nil {
			break
		}
		s.in.consume(len(b))
	}
	s.release()
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// spliceShm moves bytes both ways between a rank's rings and a stream
// until both directions end, then releases the pair: the rank's ring
// drains straight into the stream's writes, and the stream's reads land
// straight in the ring to the rank. On an error either way the stream is
// reset and the unix connection closed, which ends the other way too.
func spliceShm(side *shmSide, s network.Stream) {
	var wg sync.WaitGroup
	var once sync.Once
	fail := func() {
		once.Do(func() {
			_ = s.Reset()
			_ = side.conn.Close()
		})
	}
	wg.Add(2)
	go func() {
		defer wg.Done()
		if drainRing(s, side.in) == nil {
			_ = s.CloseWrite()
		} else {
			fail()
		}
	}()
	go func() {
		defer wg.Done()
		if fillRing(side.out, s) == nil {
			side.out.closeWrite()
		} else {
			fail()
		}
	}()
	wg.Wait()
	side.release()
	_ = s.Close()
}

// drainRing writes what the ring holds to w, in slices of the ring of at
// most relayBuffer bytes, until the ring's writer closes it (nil).
func drainRing(w io.Writer, r *shmRing) error {
	for {
		b, err := r.readable()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		b = b[:min(len(b), relayBuffer)]
		if _, err := w.Write(b); err != nil {
			return err
		}
		r.consume(len(b))
	}
}

// fillRing reads src into the ring's room, at most relayBuffer bytes a
// read, until src ends (nil).
func fillRing(r *shmRing, src io.Reader) error {
	for {
		b, err := r.writable()
		if err != nil {
			return err
		}
		n, err := src.Read(b[:min(len(b), relayBuffer)])
		if n > 0 {
			r.commit(n)
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// serveShmEcho echoes on a ring pair offered on conn.
func serveShmEcho(conn *net.UnixConn, poll time.Duration) error {
	side, err := acceptRings(conn, poll)
	if err != nil {
		return err
	}
	if err := echoLoop(side); err != nil {
		side.release()
		return err
	}
	return side.hangUp()
}

// shmRelayTarget is the shm relay chain; each round connects anew and
// gets new rings.
type shmRelayTarget struct {
	chain
	poll time.Duration
}

func (r *shmRelayTarget) name() string { return "shm relay chain" }

// startShmRelay starts the shm relay chain's children, their logs and
// sockets in dir.
func startShmRelay(exe, dir string, poll time.Duration) (*shmRelayTarget, error) {
	c, err := startChain(exe, dir, "shm", "shm ", "--shm", "--poll", poll.String())
	if err != nil {
		return nil, err
	}
	return &shmRelayTarget{chain: c, poll: poll}, nil
}

// measure takes rings from the near relay and sweeps sizes up to the
// largest over them.
func (r *shmRelayTarget) measure(ctx context.Context, sizes []int) (map[int]figure, error) {
	conn, err := dialUnix(r.path)
	if err != nil {
		return nil, fmt.Errorf("shm relay chain: %w", err)
	}
	side, err := acceptRings(conn, r.poll)
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("shm relay chain: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() }) // the waits end on gone
	defer stop()
	results, err := sweep(side, sizes[len(sizes)-1])
	if err != nil {
		side.release()
		return nil, fmt.Errorf("shm relay chain: %w", err)
	}
	if err := side.hangUp(); err != nil {
		return nil, fmt.Errorf("shm relay chain: hang up: %w", err)
	}
	return figures(results), nil
}
