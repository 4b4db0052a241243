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

// TestClassSOnEightRanks runs IS class S on 8 ranks of the mpi library,
// spread over 2 agents, and checks every rank sees the verification pass
// and rank 0 reports it.
func TestClassSOnEightRanks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var report strings.Builder
	err := npbtest.Run(ctx, 2, 8, func(c npb.Comm) error {
		var out strings.Builder
		ok, err := run(ctx, c, classes['S'], &out)
		if err != nil {
			return err
		}
		if c.Rank() == 0 {
			report.WriteString(out.String())
		}
		if !ok {
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
