package main

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/examples/internal/npb"
	"github.com/zorilla-p2p/zorilla/examples/internal/npb/npbtest"
)

// TestClassSOnEightRanks runs IS class S on 8 ranks of the mpi library,
// spread over 2 agents, and checks every rank sees the verification pass
// and rank 0 reports it.
func TestClassSOnEightRanks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var report strings.Builder
	err := npbtest.Run(ctx, 2, 8, func(c npb.Comm) error {
		var out strings.Builder
		res, err := run(ctx, c, classes['S'], &out)
		if err != nil {
			return err
		}
		if c.Rank() == 0 {
			report.WriteString(out.String())
		}
		if !res.Verified {
			return errors.New("verification failed:\n" + out.String())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Total processes =                        8", "Verification    =               SUCCESSFUL"} {
		if !strings.Contains(report.String(), want) {
			t.Errorf("rank 0's report lacks %q:\n%s", want, report.String())
		}
	}
}

// benchClass runs IS class c on size ranks, one per agent, and reports
// NPB's timed seconds (rank 0's, the slowest rank's time).
func benchClass(b *testing.B, c npb.Class, size int) {
	ctx := context.Background()
	var secs float64
	for b.Loop() {
		err := npbtest.Run(ctx, size, size, func(cm npb.Comm) error {
			res, err := run(ctx, cm, classes[c], io.Discard)
			if err == nil && !res.Verified {
				err = errors.New("verification failed")
			}
			if cm.Rank() == 0 {
				secs += res.Seconds
			}
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(secs/float64(b.N), "npb-s/op")
}

func BenchmarkClassA2Ranks(b *testing.B) { benchClass(b, 'A', 2) }
func BenchmarkClassA4Ranks(b *testing.B) { benchClass(b, 'A', 4) }
func BenchmarkClassB2Ranks(b *testing.B) { benchClass(b, 'B', 2) }
func BenchmarkClassB4Ranks(b *testing.B) { benchClass(b, 'B', 4) }
