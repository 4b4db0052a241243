package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// ringPair is a relay's side and a rank's side of one ring pair, offered
// and accepted over a socket pair.
func ringPair(t *testing.T, poll time.Duration) (relay, rank *shmSide) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	conns := make([]*net.UnixConn, 2)
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "socketpair")
		c, err := net.FileConn(f) // (a copy of f)
		_ = f.Close()
		if err != nil {
			t.Fatal(err)
		}
		conns[i] = c.(*net.UnixConn)
	}
	if relay, err = offerRings(conns[0], poll); err != nil {
		t.Fatal(err)
	}
	if rank, err = acceptRings(conns[1], poll); err != nil {
		t.Fatal(err)
	}
	return relay, rank
}

// Both rings of a pair deliver every byte in order, through many laps,
// whatever the sizes of the writes and reads (some larger than the ring),
// with and without a poll before each sleep, then io.EOF once the writer
// hangs up.
func TestShmRingsDeliverEveryByte(t *testing.T) {
	for _, poll := range []time.Duration{0, 20 * time.Microsecond} {
		relay, rank := ringPair(t, poll)
		rng := rand.New(rand.NewPCG(uint64(poll), 1))
		data := make([]byte, 3*shmRingCap+12345)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		// Both ways at once: rank to relay with Write and Read, relay
		// to rank with the relay's own calls (writable, commit; the
		// rank reads with readable and consume).
		errs := make(chan error, 3)
		go func() { errs <- writeChunks(rank, data, rand.New(rand.NewPCG(2, 2))) }()
		go func() {
			err := fillRing(relay.out, bytes.NewReader(data))
			relay.out.closeWrite()
			errs <- err
		}()
		var down bytes.Buffer
		go func() { errs <- drainRing(&down, rank.in) }() // until the relay closes
		up, err := readChunks(relay, len(data), rand.New(rand.NewPCG(3, 3)))
		if err != nil {
			t.Fatalf("poll %v: relay reads: %v", poll, err)
		}
		for range 3 {
			if err := <-errs; err != nil {
				t.Fatalf("poll %v: %v", poll, err)
			}
		}
		if !bytes.Equal(up, data) || !bytes.Equal(down.Bytes(), data) {
			t.Fatalf("poll %v: the bytes differ (up %d, down %d of %d)", poll, len(up), down.Len(), len(data))
		}
		if err := rank.hangUp(); err != nil {
			t.Fatalf("poll %v: hang up: %v", poll, err)
		}
		if _, err := relay.in.readable(); !errors.Is(err, io.EOF) {
			t.Fatalf("poll %v: the relay reads %v after the hang-up, want io.EOF", poll, err)
		}
		relay.release()
	}
}

// A wait on a ring whose peer closed its unix connection ends with
// errRingPeerGone, not at the nap's end: a dead rank does not hold its
// relay.
func TestShmRingPeerGone(t *testing.T) {
	relay, rank := ringPair(t, 0)
	defer relay.release()
	got := make(chan error, 1)
	go func() {
		_, err := relay.in.readable()
		got <- err
	}()
	rank.release() // no hang-up: as if the rank died
	select {
	case err := <-got:
		if !errors.Is(err, errRingPeerGone) {
			t.Fatalf("wait after the peer left: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the wait did not end when the peer left")
	}
}

// A mapping refuses a file that is no ring.
func TestMapRingRefuses(t *testing.T) {
	fd, err := unix.MemfdCreate("not-a-ring", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if _, err := mapRing(fd, 0, nil); err == nil || !strings.Contains(err.Error(), "not sealed") {
		t.Errorf("unsealed file: %v", err)
	}
	if _, err := createRing("x", 3000); err == nil {
		t.Error("a ring of 3000 bytes was made")
	}
}

// The shm relay chain in one process (echo, far relay, near relay, each
// as the bench runs it as a child): every byte of messages from 1 byte to
// twice the ring comes back intact, on two connections one after the
// other, and each relay ends cleanly.
func TestShmRelayChainDeliversEveryByte(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	shm := &ShmRings{}
	echoPath := filepath.Join(dir, "echo.sock")
	echo := startInProcess(t, func(stdin io.Reader, stdout, stderr io.Writer) error {
		return ServeEchoUnix(ctx, echoPath, shm, stdin, stdout, stderr)
	})
	far := startInProcess(t, func(stdin io.Reader, stdout, stderr io.Writer) error {
		return FarRelay(ctx, echoPath, shm, stdin, stdout, stderr)
	})
	nearPath := filepath.Join(dir, "near.sock")
	near := startInProcess(t, func(stdin io.Reader, stdout, stderr io.Writer) error {
		return NearRelay(ctx, nearPath, far.line, shm, stdin, stdout, stderr)
	})
	if !strings.Contains(near.line, "/tls/1.0.0, /yamux/1.0.0") {
		t.Errorf("the near relay's connection: %q", near.line)
	}
	rng := rand.New(rand.NewPCG(7, 7))
	for conn := range 2 {
		c, err := dialUnix(nearPath)
		if err != nil {
			t.Fatal(err)
		}
		rank, err := acceptRings(c, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, size := range []int{1, 8, 4095, 64 << 10, shmRingCap - 1, 2*shmRingCap + 3} {
			msg := make([]byte, size)
			for i := range msg {
				msg[i] = byte(rng.Uint32())
			}
			var hdr [echoHeaderLen]byte
			binary.BigEndian.PutUint32(hdr[:4], uint32(size))
			binary.BigEndian.PutUint32(hdr[4:], 1)
			if _, err := rank.Write(append(hdr[:], msg...)); err != nil {
				t.Fatalf("connection %d, %d bytes: write: %v", conn, size, err)
			}
			back := make([]byte, size)
			if _, err := io.ReadFull(rank, back); err != nil {
				t.Fatalf("connection %d, %d bytes: read: %v", conn, size, err)
			}
			if !bytes.Equal(back, msg) {
				t.Fatalf("connection %d, %d bytes: the echo differs", conn, size)
			}
		}
		if err := rank.hangUp(); err != nil {
			t.Fatalf("connection %d: hang up: %v", conn, err)
		}
	}
	for _, p := range []*inProcess{near, far, echo} {
		if err := p.stop(); err != nil {
			t.Error(err)
		}
		if p.stderr.Len() > 0 {
			t.Errorf("said on stderr: %s", p.stderr.String())
		}
	}
}

// inProcess is a child of the bench run as a goroutine of the test.
type inProcess struct {
	line   string // the first line it printed
	stdin  *io.PipeWriter
	stderr *lockedBuffer
	done   chan error
}

func startInProcess(t *testing.T, run func(stdin io.Reader, stdout, stderr io.Writer) error) *inProcess {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &inProcess{stdin: inW, stderr: &lockedBuffer{}, done: make(chan error, 1)}
	go func() {
		err := run(inR, outW, p.stderr)
		_ = outW.Close()
		p.done <- err
	}()
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(outR)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		_, _ = io.Copy(io.Discard, outR)
	}()
	select {
	case line, ok := <-lines:
		if !ok {
			t.Fatalf("ended without a line: %v", <-p.done)
		}
		p.line = line
	case <-time.After(childStartWait):
		t.Fatal("printed no line")
	}
	t.Cleanup(func() { _ = p.stop() })
	return p
}

// stop closes its stdin and waits for it to end.
func (p *inProcess) stop() error {
	_ = p.stdin.Close()
	select {
	case err, ok := <-p.done:
		if ok {
			close(p.done)
		}
		return err
	case <-time.After(childStopGrace):
		return errors.New("did not end after its stdin closed")
	}
}

// writeChunks writes data to w in pieces of random sizes up to twice the
// ring.
func writeChunks(w io.Writer, data []byte, rng *rand.Rand) error {
	for len(data) > 0 {
		n := min(len(data), 1+rng.IntN(2*shmRingCap))
		if rng.IntN(2) == 0 {
			n = min(n, 1+rng.IntN(100))
		}
		if _, err := w.Write(data[:n]); err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

// readChunks reads n bytes from r in reads of random sizes.
func readChunks(r io.Reader, n int, rng *rand.Rand) ([]byte, error) {
	out := make([]byte, 0, n)
	for len(out) < n {
		buf := make([]byte, min(n-len(out), 1+rng.IntN(shmRingCap)))
		if rng.IntN(2) == 0 {
			buf = buf[:min(len(buf), 1+rng.IntN(100))]
		}
		k, err := r.Read(buf)
		out = append(out, buf[:k]...)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// lockedBuffer is a buffer the goroutines of an in-process child write to
// while the test may read it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Len()
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
