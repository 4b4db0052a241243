package mpi

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/zorilla-p2p/zorilla/mpi/internal/proto"
)

// Environment variables the agent sets for every rank process.
const (
	EnvSocket  = "ZORILLA_SOCKET"  // path of the agent's MPI unix socket
	EnvJob     = "ZORILLA_JOB"     // job ID
	EnvKey     = "ZORILLA_KEY"     // job key (secret)
	EnvRank    = "ZORILLA_RANK"    // this process's rank, 0..size-1
	EnvSize    = "ZORILLA_SIZE"    // number of ranks
	EnvReplica = "ZORILLA_REPLICA" // which copy of the rank this is, from 0
)

// Options say which agent to connect to and who this process is. Init reads
// them from the environment; InitWith takes them explicitly, which lets a test
// run every rank as a goroutine of one process.
type Options struct {
	Socket  string // agent's unix socket path
	Job     string // job ID
	Key     string // job key
	Rank    int
	Size    int
	Replica int

	// Checkpoints (see Comm.Checkpoint): the folder this rank's files go
	// to, how long to wait between two (0: every call takes one), and the
	// file to restart from ("" to start from scratch).
	CheckpointDir   string
	CheckpointEvery time.Duration
	Restore         string
	// A malleable job restarted at another size: the folder of every old
	// rank's file, the checkpoint's number, and the old run's size
	// (RestoredRank). Restore is then empty.
	RestoreDir  string
	RestoreNum  uint64
	RestoreSize int
}

// OptionsFromEnv reads Options from the ZORILLA_* environment variables.
func OptionsFromEnv() (Options, error) {
	o := Options{Socket: os.Getenv(EnvSocket), Job: os.Getenv(EnvJob), Key: os.Getenv(EnvKey)}
	for _, f := range []struct {
		name string
		v    *int
	}{{EnvRank, &o.Rank}, {EnvSize, &o.Size}, {EnvReplica, &o.Replica}} {
		s, ok := os.LookupEnv(f.name)
		if !ok {
			return Options{}, fmt.Errorf("%w: %s not set (run the program with zorilla submit)", ErrArg, f.name)
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			return Options{}, fmt.Errorf("%w: %s=%q: %v", ErrArg, f.name, s, err)
		}
		*f.v = n
	}
	if err := o.checkpointEnv(); err != nil {
		return Options{}, err
	}
	return o, o.validate()
}

func (o Options) validate() error {
	switch {
	case o.Socket == "":
		return argErr("no agent socket")
	case o.Job == "" || len(o.Job) > proto.MaxJobLen:
		return argErr("job ID of %d bytes", len(o.Job))
	case len(o.Key) > proto.MaxKeyLen:
		return argErr("job key of %d bytes", len(o.Key))
	case o.Size < 1 || o.Size > proto.MaxRanks:
		return argErr("size %d", o.Size)
	case o.Rank < 0 || o.Rank >= o.Size:
		return argErr("rank %d of %d", o.Rank, o.Size)
	case o.Restore != "" && o.RestoreDir != "":
		return argErr("both a checkpoint file and a folder to restore from")
	case o.Replica < 0 || o.Replica > 1<<16:
		return argErr("replica %d", o.Replica)
	}
	return nil
}
