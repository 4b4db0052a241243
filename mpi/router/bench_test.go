package router_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/zorilla-p2p/zorilla/mpi"
	"github.com/zorilla-p2p/zorilla/mpi/internal/mpitest"
	"github.com/zorilla-p2p/zorilla/mpi/router"
)

var benchSizes = []int{8, 1 << 10, 64 << 10, 1 << 20, 8 << 20}

// BenchmarkPingPong measures a round trip of size bytes between two ranks on
// two agents: one op is one round trip, so one-way latency is half of
// ns/op, and MB/s counts both directions.
func BenchmarkPingPong(b *testing.B) {
	benchPingPong(b, func(c *mpitest.Cluster) (*mpitest.Job, error) { return c.AddJob(2, mpitest.RoundRobin(2)) })
}

// BenchmarkPingPongReplicated is the same with two copies of each rank
// (-r 2), each agent holding one rank's lead and the other's backup: what
// the lead's fan-out to both copies, the logs and the backups' filtering
// cost over BenchmarkPingPong.
func BenchmarkPingPongReplicated(b *testing.B) {
	benchPingPong(b, func(c *mpitest.Cluster) (*mpitest.Job, error) {
		return c.AddReplicatedJob(2, 2, func(r, k int) int { return (r + k) % 2 })
	})
}

func benchPingPong(b *testing.B, add func(c *mpitest.Cluster) (*mpitest.Job, error)) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			c, err := mpitest.NewCluster(2, router.DefaultConfig())
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			j, err := add(c)
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			b.SetBytes(int64(2 * size))
			errs := j.Run(ctx, func(cm *mpi.Comm) error {
				buf := make([]byte, size)
				other := 1 - cm.Rank()
				if err := cm.Barrier(); err != nil {
					return err
				}
				timer := cm.Rank() == 0 && cm.Session().Replica() == 0
				if timer {
					b.ResetTimer()
				}
				for i := 0; i < b.N; i++ {
					if cm.Rank() == 0 {
						if err := mpi.Send(cm, buf, other, 0); err != nil {
							return err
						}
					}
					if _, err := mpi.Recv(cm, buf, other, 0); err != nil {
						return err
					}
					if cm.Rank() == 1 {
						if err := mpi.Send(cm, buf, other, 0); err != nil {
							return err
						}
					}
				}
				if timer {
					b.StopTimer()
				}
				return nil
			})
			for _, err := range errs {
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRawStream is the same ping-pong on a bare libp2p stream between
// the same kind of hosts: the ceiling of this stack.
func BenchmarkRawStream(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			c, err := mpitest.NewCluster(2, router.DefaultConfig())
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			c.Hosts[1].SetStreamHandler("/bench/echo", func(s network.Stream) {
				buf := make([]byte, size)
				for {
					if _, err := io.ReadFull(s, buf); err != nil {
						_ = s.Reset()
						return
					}
					if _, err := s.Write(buf); err != nil {
						return
					}
				}
			})
			s, err := c.Hosts[0].NewStream(context.Background(), c.Hosts[1].ID(), "/bench/echo")
			if err != nil {
				b.Fatal(err)
			}
			defer s.Reset()
			echoRounds(b, s, size)
		})
	}
}

// BenchmarkRelayChain is the same ping-pong through the hops of
// BenchmarkPingPong (unix socket, agent, libp2p stream, agent, unix
// socket) with relays that only copy bytes: the floor of any design where
// agents relay, measured in the same process as BenchmarkPingPong.
func BenchmarkRelayChain(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			c, err := mpitest.NewCluster(2, router.DefaultConfig())
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			dir, err := os.MkdirTemp("", "relay")
			if err != nil {
				b.Fatal(err)
			}
			defer os.RemoveAll(dir)
			near, far := filepath.Join(dir, "near"), filepath.Join(dir, "far")
			ln, err := net.Listen("unix", near)
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			lf, err := net.Listen("unix", far)
			if err != nil {
				b.Fatal(err)
			}
			defer lf.Close()
			go func() { // the far rank: echoes
				conn, err := lf.Accept()
				if err != nil {
					return
				}
				defer conn.Close()
				buf := make([]byte, size)
				for {
					if _, err := io.ReadFull(conn, buf); err != nil {
						return
					}
					if _, err := conn.Write(buf); err != nil {
						return
					}
				}
			}()
			c.Hosts[1].SetStreamHandler("/bench/relay", func(s network.Stream) { // the far relay
				conn, err := net.Dial("unix", far)
				if err != nil {
					_ = s.Reset()
					return
				}
				relay(conn, s)
			})
			go func() { // the near relay
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				s, err := c.Hosts[0].NewStream(context.Background(), c.Hosts[1].ID(), "/bench/relay")
				if err != nil {
					_ = conn.Close()
					return
				}
				relay(conn, s)
			}()
			conn, err := net.Dial("unix", near)
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			echoRounds(b, conn, size)
		})
	}
}

// echoRounds times b.N round trips of size bytes to an echo at the far end
// of rw.
func echoRounds(b *testing.B, rw io.ReadWriter, size int) {
	buf := make([]byte, size)
	b.SetBytes(int64(2 * size))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := rw.Write(buf); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(rw, buf); err != nil {
			b.Fatal(err)
		}
	}
}

// relay copies both ways between conn and s until either ends.
func relay(conn net.Conn, s network.Stream) {
	done := make(chan struct{}, 2)
	cp := func(dst io.Writer, src io.Reader) {
		buf := make([]byte, 512<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				if _, err := dst.Write(buf[:n]); err != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		done <- struct{}{}
	}
	go cp(s, conn)
	go cp(conn, s)
	<-done
	_ = s.Reset()
	_ = conn.Close()
	<-done
}
