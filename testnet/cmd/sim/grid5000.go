package main

import (
	"fmt"
	"io"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/testnet"
	"github.com/zorilla-p2p/zorilla/testnet/sim"
)

// grid5000 runs the P2P-MPI experiment's dry-run jobs on the simulated
// Grid'5000 (n from 100 to 600 by 50, concentrate and spread) and prints
// them as the real reproduction's table (docs/grid5000/table.txt).
func grid5000(seed uint64, stdout io.Writer) error {
	var ns []int
	for n := 100; n <= 600; n += 50 {
		ns = append(ns, n)
	}
	allocs, err := sim.Grid5000(sim.Grid5000Config(seed), []job.Strategy{job.Concentrate, job.Spread}, ns)
	if err != nil {
		return err
	}
	if err := testnet.WriteTable(stdout, testnet.Grid5000Clusters(), allocs); err != nil {
		return fmt.Errorf("grid5000: %w", err)
	}
	return nil
}
