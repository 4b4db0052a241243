package docker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/node"
)

// The failure table on containers: a stencil job (every message checked
// against the serial computation) loses one of its hosts, killed by
// docker or cut off from both its networks, while it computes. With two
// copies of each rank it goes on and ends verified, the lost copies on
// record; with one it starts again elsewhere and ends verified after two
// attempts. The host comes back afterwards, for the subtests that follow.
func checkFailover(t *testing.T, ctx context.Context, tn *Testnet, bin string) {
	for _, c := range []struct {
		fault string
		r     int
	}{{"kill", 2}, {"cut", 2}, {"kill", 1}} {
		t.Run(fmt.Sprintf("%s r=%d", c.fault, c.r), func(t *testing.T) {
			failoverCase(t, ctx, tn, bin, c.fault, c.r)
		})
	}
}

func failoverCase(t *testing.T, ctx context.Context, tn *Testnet, bin, fault string, r int) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	cs := tn.Containers()
	submitter := cs[0]
	cl, err := node.Dial(submitter.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	prog := filepath.Join(bin, "examples", "stencil")
	b, err := cl.Upload(ctx, prog)
	if err != nil {
		t.Fatal(err)
	}
	d := job.NewDescription(prog, []string{"-iters", "300", "-delay", "20ms", "-block", "20000"}, 4)
	d.Replicas, d.Strategy = r, job.Spread
	id, err := cl.Submit(ctx, node.SubmitRequest{Description: d, Program: proto.FileRef{Name: "stencil", Hash: b.Hash, Size: b.Size}})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := awaitRunning(ctx, cl, id)
	if err != nil {
		t.Fatal(err)
	}
	var victim Container
	for _, h := range rec.Plan.Hosts {
		if i := slices.IndexFunc(cs, func(c Container) bool { return c.PeerID == h.Offer.Peer }); i > 0 {
			victim = cs[i]
		}
	}
	if victim.Name == "" {
		t.Fatalf("no host of the job but the submitter: %v", rec.Plan.Peers())
	}
	op, undo := tn.Kill, tn.Start
	if fault == "cut" {
		op, undo = tn.Cut, tn.Heal
	}
	if err := op(ctx, victim.Short()); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := undo(context.Background(), victim.Short()); err != nil {
			t.Errorf("bring %s back: %v", victim.Name, err)
		}
	}()
	end, err := awaitJob(ctx, submitter.DataDir, id)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := os.ReadFile(filepath.Join(submitter.DataDir, "jobs", string(id), "stdout"))
	if end.State != job.Done || !strings.Contains(string(out), "verified") {
		t.Fatalf("job ended %s (%s) after %s of %s; stdout:\n%s", end.State, end.Reason, fault, victim.Name, out)
	}
	switch {
	case r > 1 && !slices.ContainsFunc(end.Lost, func(l job.LostCopy) bool { return l.Host == victim.PeerID }):
		t.Errorf("lost copies %+v: none on %s", end.Lost, victim.Name)
	case r == 1 && (end.Restarts != 1 || len(end.Runs) != 2):
		t.Errorf("%d restarts, %d runs: want the job started again once", end.Restarts, len(end.Runs))
	}
	t.Logf("%s of %s (r=%d): job %s done in %v; lost %d copies, %d runs", fault, victim.Name, r, id,
		end.Updated.Sub(end.Created).Round(time.Millisecond), len(end.Lost), len(end.Runs))
}

// awaitRunning polls the job's record until it runs (all its ranks were
// released).
func awaitRunning(ctx context.Context, cl *node.Client, id job.ID) (job.Record, error) {
	for {
		r, err := cl.Job(ctx, id)
		if err == nil && r.State == job.Running && r.Plan != nil {
			return r, nil
		}
		if err == nil && r.State.Terminal() {
			return r, fmt.Errorf("job %s ended %s (%s) before it ran", id, r.State, r.Reason)
		}
		select {
		case <-ctx.Done():
			return r, fmt.Errorf("job %s still %s: %w", id, r.State, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
