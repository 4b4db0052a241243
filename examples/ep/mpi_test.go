package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/examples/internal/npb"
	"github.com/zorilla-p2p/zorilla/examples/internal/npb/npbtest"
)

// TestClassSOnFourRanks runs EP class S on 4 ranks of the mpi library,
// spread over 2 agents: every rank must see NPB's sums.
func TestClassSOnFourRanks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var report strings.Builder
	err := npbtest.Run(ctx, 2, 4, func(c npb.Comm) error {
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
	for _, want := range []string{"No. Gaussian Pairs =       13176389", "Total processes =                        4",
		"Verification    =               SUCCESSFUL"} {
		if !strings.Contains(report.String(), want) {
			t.Errorf("rank 0's report lacks %q:\n%s", want, report.String())
		}
	}
}
