package testnet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/job/submitter"
	"github.com/zorilla-p2p/zorilla/node"
	"github.com/zorilla-p2p/zorilla/worker"
)

// Helpers of the end-to-end tests of floods, the owner policy and leases.

// e2eSubmitter is a submitter config with short waits: floods of radius 1,
// 2, ... 100 ms, 200 ms, ... apart, 100 ms of grace once feasible.
func e2eSubmitter() submitter.Config {
	c := submitter.DefaultConfig()
	c.Schedule.First = 100 * time.Millisecond
	c.OfferGrace = 100 * time.Millisecond
	c.StartTimeout = 20 * time.Second
	c.InitTimeout = 20 * time.Second
	c.LostAfter = 5 * time.Second
	return c
}

// e2eConfig sets what every agent of these tests shares: fast submitter,
// no flood rate limit in the way, and the given cores (P = cores, J = 1
// unless the test says otherwise).
func e2eConfig(cfg *node.Config, cores int) {
	cfg.Cores, cfg.MaxProcs, cfg.MaxJobs = cores, cores, 1
	cfg.Services.Submitter = e2eSubmitter()
	cfg.Services.Flood.Rate, cfg.Services.Flood.Burst = 1000, 1000
}

// awaitNet waits, up to a minute, until cond holds on net.
func awaitNet(t *testing.T, net *Net, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := net.Await(ctx, what, cond); err != nil {
		t.Fatal(err)
	}
}

// connected waits until every live agent has at least min neighbours and
// the neighbour graph is strongly connected, so a flood can reach everyone.
func connected(t *testing.T, net *Net, least int) {
	t.Helper()
	awaitNet(t, net, fmt.Sprintf("every agent has %d neighbours, graph connected", least), func() bool {
		for i, nd := range net.Nodes {
			if net.Live(i) && len(nd.Overlay().Neighbours()) < least {
				return false
			}
		}
		return net.Graph().StronglyConnected()
	})
}

// upload writes a shell script and puts it in agent nd's blob store.
func upload(t *testing.T, nd *node.Node, body string) proto.FileRef {
	t.Helper()
	path := filepath.Join(t.TempDir(), "job.sh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	h, size, err := nd.Blobs().PutFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return proto.FileRef{Name: "job.sh", Hash: h.String(), Size: size}
}

// submit starts a job (a dry run when dry) through agent nd.
func submit(t *testing.T, nd *node.Node, d job.Description, prog proto.FileRef, dry bool) job.ID {
	t.Helper()
	d.SetDefaults()
	id, err := nd.Submitter().Submit(submitter.Submission{Desc: d, Program: prog, DryRun: dry})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	return id
}

// awaitEnd follows job id on agent nd until it ends and returns its record.
func awaitEnd(t *testing.T, nd *node.Node, id job.ID) job.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var end *job.Record
	err := nd.Submitter().Watch(ctx, id, 0, func(u job.Update) error {
		if u.Kind == "end" {
			end = u.Record
		}
		return nil
	})
	if err != nil || end == nil {
		t.Fatalf("watch %s: %v (end seen: %v)", id, err, end != nil)
	}
	return *end
}

// awaitState waits until job id on agent nd is in state st.
func awaitState(t *testing.T, net *Net, nd *node.Node, id job.ID, st job.State) {
	t.Helper()
	awaitNet(t, net, fmt.Sprintf("job %s %s", id, st), func() bool {
		rec, err := nd.Submitter().Get(id)
		return err == nil && rec.State == st
	})
}

// offerers maps each offer of a record to its agent's index.
func offerers(t *testing.T, net *Net, offers []job.Offer) map[int]job.Offer {
	t.Helper()
	out := map[int]job.Offer{}
	for _, o := range offers {
		i := net.Index(o.Peer)
		if i < 0 {
			t.Fatalf("offer from %s, not an agent of the net", o.Peer)
		}
		out[i] = o
	}
	return out
}

// planHosts maps each host of a plan to its agent index and process count.
func planHosts(t *testing.T, net *Net, p *job.Plan) map[int]int {
	t.Helper()
	if p == nil {
		t.Fatal("no plan in the record")
	}
	out := map[int]int{}
	for _, h := range p.Hosts {
		i := net.Index(h.Offer.Peer)
		if i < 0 {
			t.Fatalf("plan host %s is not an agent of the net", h.Offer.Peer)
		}
		out[i] += len(h.Procs)
	}
	return out
}

// leasesOf lists the leases every live agent holds, by agent index.
func leasesOf(net *Net) map[int][]worker.Lease {
	out := map[int][]worker.Lease{}
	for i, nd := range net.Nodes {
		if net.Live(i) {
			if ls := nd.Leases().List(); len(ls) > 0 {
				out[i] = ls
			}
		}
	}
	return out
}

// holding reports whether every agent in idx holds a lease for job id.
func holding(net *Net, id job.ID, idx ...int) bool {
	for _, i := range idx {
		if _, ok := net.Nodes[i].Leases().ByJob(id); !ok {
			return false
		}
	}
	return true
}

// describeLeases prints lease tables for failure messages.
func describeLeases(m map[int][]worker.Lease) string {
	var idx []int
	for i := range m {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	var b strings.Builder
	for _, i := range idx {
		for _, l := range m[i] {
			fmt.Fprintf(&b, "agent %d: job %s %d slots %d cores committed=%v; ", i, l.Job, l.Slots, l.Cores, l.Committed)
		}
	}
	return b.String()
}

// awaitNoLeases waits until no agent holds any lease.
func awaitNoLeases(t *testing.T, net *Net, within time.Duration, why string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if err := net.Await(ctx, "no lease left anywhere "+why, func() bool { return len(leasesOf(net)) == 0 }); err != nil {
		t.Fatalf("%v: %s", err, describeLeases(leasesOf(net)))
	}
}

// indexes returns 0..n-1 except the given ones.
func indexes(n int, except ...int) []int {
	var out []int
	for i := range n {
		skip := false
		for _, e := range except {
			skip = skip || e == i
		}
		if !skip {
			out = append(out, i)
		}
	}
	return out
}

// startLoopback starts n agents on loopback TCP, configured by configure,
// and closes them when the test ends.
func startLoopback(t *testing.T, n int, configure func(int, *node.Config)) *Net {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	net, err := Loopback(ctx, n, Options{Seed: 3, Configure: configure})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = net.Close() })
	return net
}

// startMocknet starts the agents of topo on mocknet and closes them when
// the test ends.
func startMocknet(t *testing.T, topo Topology, configure func(int, *node.Config)) *Net {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	net, err := Mocknet(ctx, topo, Options{Seed: 3, Configure: configure})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = net.Close() })
	return net
}
