// Command hostname is the smallest Zorilla MPI program: every rank joins
// the job (mpi.Init), waits until all ranks have joined (Barrier), prints
// its rank, the size of the job and the host and agent it runs on, and
// leaves (mpi.Finalize). Run it through an agent:
//
//	go build -o hostname ./examples/hostname
//	zorilla submit -n 8 ./hostname
//
// and read one tagged line per rank:
//
//	[3] rank 3 of 8 on box-2 (agent 12*x3kQvT)
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/zorilla-p2p/zorilla/mpi"
)

// envAgent is the variable in which the agent names itself (its peer ID)
// to the processes it starts.
const envAgent = "ZORILLA_AGENT"

func main() { os.Exit(realMain(os.Stdout, os.Stderr)) }

// realMain runs one rank and returns its exit status.
func realMain(stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := mpi.Init(ctx); err != nil {
		fmt.Fprintln(stderr, "hostname:", err)
		return 1
	}
	if err := run(mpi.World(), here(), stdout); err != nil {
		fmt.Fprintln(stderr, "hostname:", err)
		_ = mpi.Abort(1)
		return 1
	}
	if err := mpi.Finalize(); err != nil {
		fmt.Fprintln(stderr, "hostname:", err)
		return 1
	}
	return 0
}

// place is where a rank runs.
type place struct {
	Host  string // the machine's host name
	Agent string // the agent's peer ID, abbreviated
}

// here returns the place of this process, from the OS and the environment
// the agent gave it.
func here() place {
	host, err := os.Hostname()
	if err != nil {
		host = "?"
	}
	return place{Host: host, Agent: short(os.Getenv(envAgent))}
}

// short abbreviates a peer ID as libp2p does (first two characters, a
// star, the last six), which is how `zorilla` prints agents too.
func short(id string) string {
	if len(id) <= 10 {
		return id
	}
	return id[:2] + "*" + id[len(id)-6:]
}

// run is one rank's work: wait for every rank, then say where it is.
func run(c *mpi.Comm, p place, w io.Writer) error {
	if err := c.Barrier(); err != nil {
		return fmt.Errorf("barrier: %w", err)
	}
	_, err := fmt.Fprintln(w, line(c.Rank(), c.Size(), p))
	return err
}

// line is what a rank prints.
func line(rank, size int, p place) string {
	return fmt.Sprintf("rank %d of %d on %s (agent %s)", rank, size, p.Host, p.Agent)
}
