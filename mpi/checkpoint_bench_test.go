package mpi_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/mpi"
	"github.com/zorilla-p2p/zorilla/mpi/internal/mpitest"
)

// BenchmarkCheckpoint: one coordinated checkpoint of 2 ranks on 2 agents
// (decision, markers, each rank's file written and synced, completion),
// by state size per rank; the library's part of a checkpoint, without the
// agents' copies. ZORILLA_CKPT_GIB=1 adds 1 GiB per rank.
func BenchmarkCheckpoint(b *testing.B) {
	sizes := []int{1 << 20, 16 << 20, 64 << 20, 256 << 20}
	if os.Getenv("ZORILLA_CKPT_GIB") != "" {
		sizes = append(sizes, 1<<30)
	}
	for _, size := range sizes {
		b.Run(fmt.Sprintf("%dMiB", size>>20), func(b *testing.B) {
			state := make([]byte, size)
			for i := range state {
				state[i] = byte(i)
			}
			dir := b.TempDir()
			j, err := cluster.AddJob(2, mpitest.RoundRobin(2))
			if err != nil {
				b.Fatal(err)
			}
			for r := range j.Opts {
				j.Opts[r].CheckpointDir = dir
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			b.SetBytes(int64(size))
			b.ResetTimer()
			errs := j.Run(ctx, func(c *mpi.Comm) error {
				for i := 0; i < b.N; i++ {
					if _, err := c.Checkpoint(ctx, func(w io.Writer) error {
						_, err := w.Write(state)
						return err
					}); err != nil {
						return err
					}
					_ = os.Remove(dir + "/" + mpi.CheckpointFile(uint64(i), c.Rank())) // keep one per rank on disk
				}
				return nil
			})
			b.StopTimer()
			for r, err := range errs {
				if err != nil {
					b.Fatalf("rank %d: %v", r, err)
				}
			}
		})
	}
}
