package mpi_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/mpi"
)

// BenchmarkPingpongOneAgent: one-way time of a ping-pong between two ranks
// (goroutines of this process) on one agent, through shared memory.
func BenchmarkPingpongOneAgent(b *testing.B) {
	for _, size := range []int{8, 64 << 10, 256 << 10, 1 << 20, 8 << 20} {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			j, err := cluster.AddJob(2, placements["one agent"])
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			b.SetBytes(int64(size))
			errs := j.Run(ctx, func(c *mpi.Comm) error {
				msg := make([]byte, size)
				other := 1 - c.Rank()
				if c.Rank() == 0 {
					b.ResetTimer()
				}
				for i := 0; i < b.N; i++ {
					if c.Rank() == 0 {
						if err := mpi.Send(c, msg, other, 0); err != nil {
							return err
						}
					}
					if _, err := mpi.Recv(c, msg, other, 0); err != nil {
						return err
					}
					if c.Rank() == 1 {
						if err := mpi.Send(c, msg, other, 0); err != nil {
							return err
						}
					}
				}
				if c.Rank() == 0 {
					b.StopTimer()
				}
				return nil
			})
			for _, err := range errs {
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(2*b.N)/1000, "us/one-way")
		})
	}
}
