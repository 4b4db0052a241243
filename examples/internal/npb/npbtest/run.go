// Package npbtest runs the ranks of an NPB port as goroutines of one test
// process, on real mpi routers: a few agents, each a libp2p host on
// loopback TCP with a router serving its own unix socket, the ranks spread
// round-robin over them so that messages go both through one agent and
// between agents. It uses only the public API of mpi and mpi/router (the
// mpi package's own harness is internal to it).
package npbtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"

	"github.com/zorilla-p2p/zorilla/examples/internal/npb"
	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/mpi"
	"github.com/zorilla-p2p/zorilla/mpi/router"
)

// Run runs fn as every rank of a job of size ranks on agents agents, and
// returns the ranks' errors joined. A rank whose fn fails aborts the job, so
// the others' calls fail too rather than hang; ctx bounds the whole run.
func Run(ctx context.Context, agents, size int, fn func(c npb.Comm) error) error {
	cl, err := newCluster(agents)
	if err != nil {
		return err
	}
	defer cl.close()
	jobs, opts, err := cl.addJob(size)
	if err != nil {
		return err
	}
	defer func() {
		for a, j := range jobs {
			if j != nil {
				cl.routers[a].RemoveJob(j.ID())
			}
		}
	}()
	errs := make([]error, size)
	var wg sync.WaitGroup
	for r := range size {
		wg.Go(func() { errs[r] = runRank(ctx, opts[r], fn) })
	}
	if err := release(ctx, jobs); err != nil {
		for _, j := range jobs {
			if j != nil {
				j.Fail(err)
			}
		}
		errs = append(errs, err)
	}
	wg.Wait()
	return errors.Join(errs...)
}

// runRank is one rank's life: Init, fn, then Finalize, or Abort on error.
func runRank(ctx context.Context, opt mpi.Options, fn func(c npb.Comm) error) error {
	s, err := mpi.InitWith(ctx, opt)
	if err != nil {
		return fmt.Errorf("rank %d: %w", opt.Rank, err)
	}
	if err := fn(npb.World{C: s.World()}); err != nil {
		_ = s.Abort(1)
		return fmt.Errorf("rank %d: %w", opt.Rank, err)
	}
	return s.Finalize()
}

// release is the second phase of the start: once every agent's ranks are
// in Init, let them all go.
func release(ctx context.Context, jobs []*router.Job) error {
	for a, j := range jobs {
		if j == nil {
			continue
		}
		select {
		case <-j.InitReady():
		case <-ctx.Done():
			return fmt.Errorf("agent %d: ranks not in Init: %w", a, ctx.Err())
		}
	}
	for _, j := range jobs {
		if j != nil {
			j.Release()
		}
	}
	return nil
}

type cluster struct {
	dir     string
	hosts   []host.Host
	routers []*router.Router
}

func newCluster(n int) (*cluster, error) {
	// A short directory: unix socket paths are limited to about 100 bytes.
	dir, err := os.MkdirTemp("", "npb")
	if err != nil {
		return nil, err
	}
	c := &cluster{dir: dir}
	for i := range n {
		h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"),
			libp2p.Transport(tcp.NewTCPTransport, tcp.DisableReuseport()), libp2p.DisableRelay())
		if err != nil {
			return nil, errors.Join(fmt.Errorf("host %d: %w", i, err), c.close())
		}
		c.hosts = append(c.hosts, h)
		r, err := router.New(h, filepath.Join(dir, fmt.Sprintf("a%d.sock", i)), router.DefaultConfig())
		if err != nil {
			return nil, errors.Join(fmt.Errorf("router %d: %w", i, err), c.close())
		}
		c.routers = append(c.routers, r)
	}
	for _, a := range c.hosts {
		for _, b := range c.hosts {
			if a != b {
				a.Peerstore().AddAddrs(b.ID(), b.Addrs(), peerstore.PermanentAddrTTL)
			}
		}
	}
	return c, nil
}

// addJob adds a job of size ranks, rank r on agent r mod agents, and
// returns each agent's job (nil where it runs no rank) and each rank's
// options for InitWith.
func (c *cluster) addJob(size int) ([]*router.Job, []mpi.Options, error) {
	key := make([]byte, 16)
	_, _ = rand.Read(key)
	spec := router.JobSpec{ID: "npb", Key: hex.EncodeToString(key), Size: size, Replicas: 1}
	hosts := make([][]peer.ID, size)
	local := make([][]router.Proc, len(c.hosts))
	opts := make([]mpi.Options, size)
	for r := range size {
		a := r % len(c.hosts)
		hosts[r] = []peer.ID{c.hosts[a].ID()}
		local[a] = append(local[a], router.Proc{Rank: r})
		opts[r] = mpi.Options{Socket: c.routers[a].Socket(), Job: spec.ID, Key: spec.Key, Rank: r, Size: size}
	}
	spec.Table = proto.RankTableOf(hosts, nil)
	jobs := make([]*router.Job, len(c.hosts))
	for a, procs := range local {
		if len(procs) == 0 {
			continue
		}
		s := spec
		s.Local = procs
		j, err := c.routers[a].AddJob(s)
		if err != nil {
			return nil, nil, fmt.Errorf("agent %d: add job: %w", a, err)
		}
		jobs[a] = j
	}
	return jobs, opts, nil
}

func (c *cluster) close() error {
	var errs []error
	for _, r := range c.routers {
		errs = append(errs, r.Close())
	}
	for _, h := range c.hosts {
		errs = append(errs, h.Close())
	}
	return errors.Join(append(errs, os.RemoveAll(c.dir))...)
}
