package testnet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/job/submitter"
	"github.com/zorilla-p2p/zorilla/node"
)

// stageLabel marks the hosts of the staging tests: every agent but 0, the
// submitter, so that all it uploads is counted as the submitter's.
const stageLabel = "stage"

// stagingNet starts hosts+1+spare loopback agents, one slot each; peer says
// whether workers stage in chunks from each other (the default) or each
// file whole from the submitter (the reference).
func stagingNet(t testing.TB, hosts, spare int, peer bool) *Net {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute+time.Duration(hosts)*5*time.Second)
	defer cancel()
	net, err := Loopback(ctx, hosts+1+spare, Options{Seed: 15, Configure: func(i int, cfg *node.Config) {
		stagingConfig(i, cfg, peer)
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = net.Close() })
	awaitStagingNet(t, net)
	return net
}

// stagingConfig is agent i's config in the staging tests.
func stagingConfig(i int, cfg *node.Config, peer bool) {
	cfg.Cores, cfg.MaxProcs, cfg.MaxJobs = 1, 1, 1
	cfg.Services.Submitter = e2eSubmitter()
	cfg.Services.Submitter.StartTimeout = 2 * time.Minute
	// Radii 300 ms, 600 ms, ... apart: on a loaded machine a radius
	// of 65 agents needs time before the flood is judged complete.
	cfg.Services.Submitter.Schedule.First = 300 * time.Millisecond
	cfg.Services.Flood.Rate, cfg.Services.Flood.Burst = 1000, 1000
	cfg.Services.Worker.PeerStaging = peer
	if i > 0 {
		cfg.Labels = []string{stageLabel}
	}
}

// awaitStagingNet waits until every agent has neighbours and the graph is
// connected.
func awaitStagingNet(t testing.TB, net *Net) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := net.Await(ctx, "every agent has neighbours, graph connected", func() bool {
		for _, nd := range net.Nodes {
			if len(nd.Overlay().Neighbours()) < 2 {
				return false
			}
		}
		return net.Graph().StronglyConnected()
	}); err != nil {
		t.Fatal(err)
	}
}

// bigScript puts a shell script of size bytes in nd's store: "exit 0" and
// then a comment of random text, so every chunk differs.
func bigScript(t testing.TB, nd *node.Node, size int) proto.FileRef {
	t.Helper()
	head := "#!/bin/sh\nexit 0\n#"
	pad := make([]byte, (size-len(head))/2+1)
	_, _ = rand.Read(pad)
	body := (head + hex.EncodeToString(pad))[:size]
	path := filepath.Join(t.TempDir(), "big.sh")
	if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	h, n, err := nd.Blobs().PutFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return proto.FileRef{Name: "big.sh", Hash: h.String(), Size: n}
}

// stagingRun is what one job's staging cost.
type stagingRun struct {
	starting  time.Duration // Starting to Running: commit, staging, fork
	submitter int64         // bytes the submitter sent: chunks and whole files
	peers     int64         // bytes hosts sent each other
}

// stageOnce runs a job of one rank on each of hosts agents of net with prog.
func stageOnce(t testing.TB, net *Net, hosts int, prog proto.FileRef) stagingRun {
	t.Helper()
	s := net.Nodes[0]
	before := s.Stats().Staging
	var peersBefore int64
	for _, nd := range net.Nodes[1:] {
		peersBefore += nd.Stats().Staging.ServedAsPeer
	}
	d := job.NewDescription(prog.Name, nil, hosts)
	d.Require.Labels = []string{stageLabel}
	d.Timeout = 3 * time.Minute
	rec := runToEnd(t, s, d, prog)
	for try := 1; try < 3 && rec.State == job.Failed && strings.Contains(rec.Reason, "not enough resources"); try++ {
		// The flood missed a host of the loaded machine: nothing was
		// staged, submit again.
		t.Logf("try %d: %s", try, rec.Reason)
		rec = runToEnd(t, s, d, prog)
	}
	if rec.State != job.Done {
		t.Fatalf("job ended %s: %s", rec.State, rec.Reason)
	}
	after := s.Stats().Staging
	run := stagingRun{submitter: after.ServedAsOwner - before.ServedAsOwner + after.WholeServed - before.WholeServed}
	for _, nd := range net.Nodes[1:] {
		run.peers += nd.Stats().Staging.ServedAsPeer
	}
	run.peers -= peersBefore
	at := firstEntered(rec)
	run.starting = at[job.Running].Sub(at[job.Starting])
	return run
}

// runToEnd submits d through nd and waits up to 5 minutes for its end.
func runToEnd(t testing.TB, nd *node.Node, d job.Description, prog proto.FileRef) job.Record {
	t.Helper()
	d.SetDefaults()
	id, err := nd.Submitter().Submit(submitter.Submission{Desc: d, Program: prog})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var end job.Record
	err = nd.Submitter().Watch(ctx, id, 0, func(u job.Update) error {
		if u.Kind == "end" {
			end = *u.Record
		}
		return nil
	})
	if end.ID == "" {
		t.Fatalf("job %s did not end: %v", id, err)
	}
	return end
}

// A job's program staged to 8 hosts in chunks: the job runs, the
// submitter sends the program about once (at most 3 times), the hosts the
// rest, and each host counted what it fetched from where.
func TestPeerStagingShares(t *testing.T) {
	const hosts, size = 8, 4 << 20
	net := stagingNet(t, hosts, 0, true)
	prog := bigScript(t, net.Nodes[0], size)
	run := stageOnce(t, net, hosts, prog)
	if run.submitter > 3*size {
		t.Fatalf("the submitter sent %d bytes for a %d-byte program to %d hosts, want at most 3x", run.submitter, size, hosts)
	}
	if got := run.submitter + run.peers; got != hosts*size {
		t.Fatalf("submitter %d + peers %d bytes = %d, want %d (each host the whole program once)", run.submitter, run.peers, got, hosts*size)
	}
	if ws := net.Nodes[0].Stats().Staging.WholeServed; ws != 0 {
		t.Fatalf("the submitter sent %d bytes of whole files with peer staging on", ws)
	}
}

// The figures of BENCHMARKS.md (peer-assisted staging):
// a 20 MB program to 16 and 64 hosts, whole files from the submitter
// (before) and chunks from peers (after). Opt-in, minutes:
//
//	ZORILLA_STAGING_HOSTS=16,64 go test ./testnet -run TestStagingFigures -v -timeout 30m
func TestStagingFigures(t *testing.T) {
	list := os.Getenv("ZORILLA_STAGING_HOSTS")
	if list == "" {
		t.Skip("set ZORILLA_STAGING_HOSTS (e.g. 16,64) to measure staging")
	}
	const size = 20 << 20
	var rows []string
	for _, f := range strings.Split(list, ",") {
		hosts, err := strconv.Atoi(f)
		if err != nil || hosts < 1 {
			t.Fatalf("ZORILLA_STAGING_HOSTS: %q is not a host count", f)
		}
		for _, peer := range []bool{false, true} {
			// A spare agent per 16: on a loaded machine the flood of a
			// large network can miss one agent of 65, which would fail a
			// job wanting every one.
			net := stagingNet(t, hosts, hosts/16, peer)
			prog := bigScript(t, net.Nodes[0], size)
			run := stageOnce(t, net, hosts, prog)
			mode := "whole (before)"
			if peer {
				mode = "chunks (after)"
			}
			rows = append(rows, fmt.Sprintf("| %d | %s | %.1f MB | %.2fx | %.1f MB | %.2f s |", hosts, mode,
				float64(run.submitter)/1e6, float64(run.submitter)/size, float64(run.peers)/1e6, run.starting.Seconds()))
			_ = net.Close()
		}
	}
	t.Logf("\n| hosts | staging | submitter sent | x file | hosts sent | Starting to Running |\n|---|---|---|---|---|---|\n%s", strings.Join(rows, "\n"))
}
