package router_test

import (
	"context"
	"fmt"
	"io"
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
			buf := make([]byte, size)
			b.SetBytes(int64(2 * size))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := s.Write(buf); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(s, buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
