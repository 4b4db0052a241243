package router_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/mpi"
	"github.com/zorilla-p2p/zorilla/mpi/internal/mpitest"
	"github.com/zorilla-p2p/zorilla/mpi/internal/proto"
	"github.com/zorilla-p2p/zorilla/mpi/router"
)

// newCluster starts agents for one test and stops them at its end.
func newCluster(t *testing.T, n int, cfg router.Config) *mpitest.Cluster {
	t.Helper()
	c, err := mpitest.NewCluster(n, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close cluster: %v", err)
		}
	})
	return c
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// rawConn is a hand-driven rank process speaking the socket protocol.
type rawConn struct {
	net.Conn
	br *bufio.Reader
}

func dialRaw(t *testing.T, socket string) *rawConn {
	t.Helper()
	c, err := net.Dial("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &rawConn{Conn: c, br: bufio.NewReaderSize(c, 1<<16)}
}

// hello introduces the raw process as opt's rank and returns the agent's
// first answer.
func (c *rawConn) hello(t *testing.T, opt mpi.Options) proto.Frame {
	t.Helper()
	h := proto.Hello{Version: proto.Version, Rank: uint32(opt.Rank), Size: uint32(opt.Size),
		Replica: uint32(opt.Replica), Job: opt.Job, Key: opt.Key}
	if _, err := c.Write(h.Encode()); err != nil {
		t.Fatal(err)
	}
	return c.read(t)
}

func (c *rawConn) read(t *testing.T) proto.Frame {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	f, err := proto.ReadFrame(c.br, 1<<20)
	if err != nil {
		t.Fatalf("raw read: %v", err)
	}
	return f
}

// refusal reads what the agent answers and checks it is a refusal with
// code, followed by the end of the connection.
func (c *rawConn) refusal(code uint8) error {
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	f, err := proto.ReadFrame(c.br, 4096)
	if err != nil {
		return fmt.Errorf("no refusal: %w", err)
	}
	r, err := proto.DecodeRefused(f.Body())
	if f.Type() != proto.TypeRefused || err != nil || r.Code != code {
		return fmt.Errorf("got frame type %d (%+v, %v), want refusal code %d", f.Type(), r, err, code)
	}
	if _, err := proto.ReadFrame(c.br, 4096); err == nil {
		return errors.New("connection still open after the refusal")
	}
	return nil
}

// pingPong runs rounds of ping-pong between ranks 0 and 1 of a 2-rank job.
func pingPong(rounds int) func(c *mpi.Comm) error {
	return func(c *mpi.Comm) error {
		buf := []int64{0}
		for i := 0; i < rounds; i++ {
			if c.Rank() == 0 {
				buf[0] = int64(i)
				if err := mpi.Send(c, buf, 1, 0); err != nil {
					return err
				}
				if _, err := mpi.Recv(c, buf, 1, 0); err != nil {
					return err
				}
				if buf[0] != int64(i)+1 {
					return fmt.Errorf("round %d: got %d", i, buf[0])
				}
				continue
			}
			if _, err := mpi.Recv(c, buf, 0, 0); err != nil {
				return err
			}
			buf[0]++
			if err := mpi.Send(c, buf, 0, 0); err != nil {
				return err
			}
		}
		return nil
	}
}

func noErrors(t *testing.T, errs []error) {
	t.Helper()
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

// waitEvent reads a job's events until one of kind want, within 10s.
func waitEvent(t *testing.T, j *router.Job, want router.EventKind) router.Event {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-j.Events():
			if !ok {
				t.Fatalf("events closed before %v", want)
			}
			if ev.Kind == want {
				return ev
			}
		case <-deadline:
			t.Fatalf("no %v event", want)
		}
	}
}
