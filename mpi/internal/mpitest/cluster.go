// Package mpitest runs a job's ranks as goroutines of one process, on real
// routers of several agents (libp2p hosts on loopback TCP), for the tests
// and examples of mpi and mpi/router.
package mpitest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"

	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/mpi"
	"github.com/zorilla-p2p/zorilla/mpi/router"
)

// Cluster is n agents in one process, each a libp2p host with a Router
// serving its own unix socket.
type Cluster struct {
	Hosts   []host.Host
	Routers []*router.Router
	dir     string
	seq     int
	mu      sync.Mutex
	gate    *gate
	// OnSaved, when set before AddJob, is every job's router.JobSpec.OnSaved,
	// told which agent heard it.
	OnSaved func(agent int, sv router.Saved)
}

// FastConfig is a router configuration with short timeouts, so that failure
// tests finish quickly.
func FastConfig() router.Config {
	cfg := router.DefaultConfig()
	cfg.HelloTimeout = 2 * time.Second
	cfg.OpenTimeout = 2 * time.Second
	cfg.HeartbeatInterval = 250 * time.Millisecond
	cfg.HeartbeatTimeout = 1500 * time.Millisecond // a loaded 2-core CI machine stalls a process for hundreds of ms
	return cfg
}

// NewCluster starts n agents that know each other's addresses.
func NewCluster(n int, cfg router.Config) (*Cluster, error) {
	dir, err := os.MkdirTemp("", "zmpi")
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir, gate: &gate{cut: map[peer.ID]bool{}, pairs: map[[2]peer.ID]bool{}}}
	for i := 0; i < n; i++ {
		v := gater{g: c.gate, self: new(peer.ID)}
		h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"),
			libp2p.Transport(tcp.NewTCPTransport, tcp.DisableReuseport()), libp2p.DisableRelay(),
			libp2p.ConnectionGater(v))
		if err == nil {
			*v.self = h.ID()
		}
		if err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("host %d: %w", i, err)
		}
		c.Hosts = append(c.Hosts, h)
		r, err := router.New(h, filepath.Join(dir, fmt.Sprintf("a%d.sock", i)), cfg)
		if err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("router %d: %w", i, err)
		}
		c.Routers = append(c.Routers, r)
	}
	for _, a := range c.Hosts {
		for _, b := range c.Hosts {
			if a != b {
				a.Peerstore().AddAddrs(b.ID(), b.Addrs(), peerstore.PermanentAddrTTL)
			}
		}
	}
	return c, nil
}

// Close stops every router and host.
func (c *Cluster) Close() error {
	var errs []error
	for _, r := range c.Routers {
		errs = append(errs, r.Close())
	}
	for _, h := range c.Hosts {
		errs = append(errs, h.Close())
	}
	errs = append(errs, os.RemoveAll(c.dir))
	return errors.Join(errs...)
}

// Job is a job added to the routers of a cluster.
type Job struct {
	ID   string
	Key  string
	Size int
	Host []int         // agent index running each rank
	Jobs []*router.Job // per agent; nil where it runs no rank
	Opts []mpi.Options // per rank, for InitWith
	c    *Cluster
}

// RoundRobin places rank r on agent r mod agents.
func RoundRobin(agents int) func(rank int) int {
	return func(rank int) int { return rank % agents }
}

// AddJob adds a job of size ranks, rank r on agent place(r), to every
// router that runs one of its ranks.
func (c *Cluster) AddJob(size int, place func(rank int) int) (*Job, error) {
	return c.AddReplicatedJob(size, 1, func(rank, _ int) int { return place(rank) })
}

// AddReplicatedJob adds a job of size ranks with replicas copies each, copy
// k of rank r on agent place(r, k) (copies of a rank on distinct agents).
// Opts lists every copy, rank by rank.
func (c *Cluster) AddReplicatedJob(size, replicas int, place func(rank, replica int) int) (*Job, error) {
	return c.addJob(size, replicas, place, nil)
}

// AddSitedJob is AddJob with agent a in site site[a] (the routers' Sites).
func (c *Cluster) AddSitedJob(size int, place func(rank int) int, site []int) (*Job, error) {
	sites := map[peer.ID]int{}
	for a, s := range site {
		sites[c.Hosts[a].ID()] = s
	}
	return c.addJob(size, 1, func(rank, _ int) int { return place(rank) }, sites)
}

func (c *Cluster) addJob(size, replicas int, place func(rank, replica int) int, sites map[peer.ID]int) (*Job, error) {
	c.mu.Lock()
	c.seq++
	id := fmt.Sprintf("job-%d", c.seq)
	c.mu.Unlock()
	key := make([]byte, 16)
	_, _ = rand.Read(key)
	j := &Job{ID: id, Key: hex.EncodeToString(key), Size: size, Host: make([]int, size),
		Jobs: make([]*router.Job, len(c.Hosts)), c: c}
	hosts := make([][]peer.ID, size)
	local := make([][]router.Proc, len(c.Hosts))
	for r := 0; r < size; r++ {
		for k := 0; k < replicas; k++ {
			a := place(r, k)
			if k == 0 {
				j.Host[r] = a
			}
			hosts[r] = append(hosts[r], c.Hosts[a].ID())
			local[a] = append(local[a], router.Proc{Rank: r, Replica: k})
			j.Opts = append(j.Opts, mpi.Options{Socket: c.Routers[a].Socket(), Job: id, Key: j.Key,
				Rank: r, Size: size, Replica: k})
		}
	}
	for a, procs := range local {
		if len(procs) == 0 {
			continue
		}
		spec := router.JobSpec{ID: id, Key: j.Key, Size: size, Replicas: replicas, Table: proto.RankTableOf(hosts, sites), Local: procs}
		if f := c.OnSaved; f != nil {
			spec.OnSaved = func(sv router.Saved) { f(a, sv) }
		}
		rj, err := c.Routers[a].AddJob(spec)
		if err != nil {
			j.Remove()
			return nil, err
		}
		j.Jobs[a] = rj
	}
	return j, nil
}

// Release waits until every agent's copies are in Init, then releases them
// all: the two phases of the start.
func (j *Job) Release(ctx context.Context) error {
	for a, rj := range j.Jobs {
		if rj == nil {
			continue
		}
		select {
		case <-rj.InitReady():
		case <-ctx.Done():
			return fmt.Errorf("agent %d not ready: %w", a, ctx.Err())
		}
	}
	for _, rj := range j.Jobs {
		if rj != nil {
			rj.Release()
		}
	}
	return nil
}

// Remove removes the job from every router.
func (j *Job) Remove() {
	for a, rj := range j.Jobs {
		if rj != nil {
			j.c.Routers[a].RemoveJob(j.ID)
		}
	}
}

// Run runs fn on every rank (every copy of every rank) as a goroutine
// (InitWith, fn, Finalize) and returns each one's error, in the order of
// Opts. The job is released once all are in Init, and removed at the end.
func (j *Job) Run(ctx context.Context, fn func(c *mpi.Comm) error) []error {
	errs := make([]error, len(j.Opts))
	var wg sync.WaitGroup
	for r := range j.Opts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = runRank(ctx, j.Opts[r], fn)
		}()
	}
	if err := j.Release(ctx); err != nil {
		for _, rj := range j.Jobs {
			if rj != nil {
				rj.Fail(err)
			}
		}
	}
	wg.Wait()
	j.Remove()
	return errs
}

func runRank(ctx context.Context, opt mpi.Options, fn func(c *mpi.Comm) error) error {
	s, err := mpi.InitWith(ctx, opt)
	if err != nil {
		return err
	}
	if err := fn(s.World()); err != nil {
		_ = s.Abort(1)
		return err
	}
	return s.Finalize()
}
