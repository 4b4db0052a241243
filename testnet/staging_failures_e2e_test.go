package testnet

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/zorilla-p2p/zorilla/internal/chunk"
	"github.com/zorilla-p2p/zorilla/internal/wire"
	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/job/submitter"
	"github.com/zorilla-p2p/zorilla/node"
)

// checkedScript puts in nd's store a shell script of size bytes that runs
// only if its own bytes hash to its first argument: a host that ran an
// unverified copy fails the job. It returns the file and the hash to pass.
func checkedScript(t testing.TB, nd *node.Node, size int) (proto.FileRef, string) {
	t.Helper()
	head := "#!/bin/sh\n[ \"$(sha256sum < \"$0\" | cut -d' ' -f1)\" = \"$1\" ] || { echo corrupt program >&2; exit 3; }\nexit 0\n#"
	pad := make([]byte, (size-len(head))/2+1)
	_, _ = rand.Read(pad)
	body := []byte((head + hex.EncodeToString(pad))[:size])
	path := filepath.Join(t.TempDir(), "checked.sh")
	if err := os.WriteFile(path, body, 0o755); err != nil {
		t.Fatal(err)
	}
	h, n, err := nd.Blobs().PutFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(body)
	return proto.FileRef{Name: "checked.sh", Hash: h.String(), Size: n}, hex.EncodeToString(sum[:])
}

// serveGarbage replaces nd's chunk server with one that answers every
// chunk request with the right number of random bytes, as a peer whose
// disk or memory went bad would, and counts the chunks it sent. The agent
// is otherwise whole: it offers, runs its ranks and fetches its own copy.
func serveGarbage(nd *node.Node, size int64) *atomic.Int64 {
	var served atomic.Int64
	nd.Host().SetStreamHandler(chunk.Protocol, func(s network.Stream) {
		_ = s.SetDeadline(time.Now().Add(time.Minute))
		q, _, err := chunk.ReadRequest(bufio.NewReader(s))
		if err != nil || q.Chunk == chunk.ManifestChunk || q.Chunk < 0 || q.Chunk >= chunk.Count(size) {
			_ = s.Reset()
			return
		}
		b := make([]byte, chunk.Len(size, q.Chunk))
		_, _ = rand.Read(b)
		if err := wire.WriteJSON(s, chunk.Reply{Size: int64(len(b))}); err != nil {
			_ = s.Reset()
			return
		}
		if _, err := s.Write(b); err != nil {
			_ = s.Reset()
			return
		}
		served.Add(1)
		_ = s.Close()
	})
	return &served
}

// stagingSum adds up every live agent's staging counters.
func stagingSum(net *Net) node.StagingStats {
	var sum node.StagingStats
	for i, nd := range net.Nodes {
		if !net.Live(i) {
			continue
		}
		st := nd.Stats().Staging
		sum.ServedAsOwner += st.ServedAsOwner
		sum.ServedAsPeer += st.ServedAsPeer
		sum.CorruptChunks += st.CorruptChunks
		sum.WholeServed += st.WholeServed
	}
	return sum
}

// A host of the job serves corrupt chunks: the hosts that asked it drop
// them, fetch those chunks elsewhere, and every host runs a verified copy
// (the program checks its own hash and the job would fail otherwise).
func TestPeerStagingCorruptChunk(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 9 agents and stages 8 MiB to 8 hosts")
	}
	const hosts, size = 8, 8 << 20
	net := stagingNet(t, hosts, 0, true)
	prog, sum := checkedScript(t, net.Nodes[0], size)
	bad := serveGarbage(net.Nodes[1], size)
	d := job.NewDescription(prog.Name, []string{sum}, hosts)
	d.Require.Labels = []string{stageLabel}
	d.Timeout = 3 * time.Minute
	rec := runToEnd(t, net.Nodes[0], d, prog)
	if rec.State != job.Done {
		t.Fatalf("job ended %s: %s", rec.State, rec.Reason)
	}
	if rec.Plan == nil || !slices.ContainsFunc(rec.Plan.Hosts, func(h job.HostPlan) bool { return h.Offer.Peer == net.Nodes[1].ID() }) {
		t.Fatal("the agent serving garbage was not a host of the job: nobody could ask it")
	}
	st := stagingSum(net)
	if bad.Load() == 0 {
		t.Fatal("no host asked the agent serving garbage for a chunk: the test shows nothing")
	}
	if st.CorruptChunks < bad.Load() {
		t.Fatalf("%d garbage chunks sent, %d counted corrupt by the hosts", bad.Load(), st.CorruptChunks)
	}
	t.Logf("%d garbage chunks sent and dropped; submitter sent %d bytes, hosts %d", bad.Load(), st.ServedAsOwner, st.ServedAsPeer)
}

// A host that was serving chunks dies while the others still fetch: they
// take its chunks from other hosts or the submitter, and the job starts on
// the spares well before any chunk request could time out.
func TestPeerStagingHostDies(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 11 agents and stages 16 MiB to 8 hosts")
	}
	const hosts, spare, size = 8, 2, 16 << 20
	// A chunk request to a peer that never answers ends after Timeout:
	// three minutes here, so that a fetch stalled on the dead host shows.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	net, err := Loopback(ctx, hosts+1+spare, Options{Seed: 15, Configure: func(i int, cfg *node.Config) {
		stagingConfig(i, cfg, true)
		cfg.Services.Chunks = chunk.DefaultConfig()
		cfg.Services.Chunks.Timeout = 3 * time.Minute
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = net.Close() })
	awaitStagingNet(t, net)
	prog, sum := checkedScript(t, net.Nodes[0], size)
	d := job.NewDescription(prog.Name, []string{sum}, hosts)
	d.Require.Labels = []string{stageLabel}
	d.Timeout = 3 * time.Minute
	d.SetDefaults()
	sub := net.Nodes[0].Submitter()
	id, err := sub.Submit(submitter.Submission{Desc: d, Program: prog})
	if err != nil {
		t.Fatal(err)
	}
	// Kill the first host seen serving a chunk to another.
	killed := -1
	if err := net.Await(ctx, "a host serving chunks", func() bool {
		for i := 1; i < len(net.Nodes); i++ {
			if net.Nodes[i].Stats().Staging.ServedAsPeer > 0 {
				killed = i
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatal(err)
	}
	deadPeer := net.Nodes[killed].ID()
	if err := net.Stop(killed); err != nil {
		t.Logf("stop agent %d: %v", killed, err)
	}
	at := time.Now()
	var end job.Record
	err = sub.Watch(ctx, id, 0, func(u job.Update) error {
		if u.Kind == "end" {
			end = *u.Record
		}
		return nil
	})
	if end.ID == "" {
		t.Fatalf("job did not end: %v", err)
	}
	if end.State != job.Done {
		t.Fatalf("job ended %s: %s", end.State, end.Reason)
	}
	if slices.ContainsFunc(end.Plan.Hosts, func(h job.HostPlan) bool { return h.Offer.Peer == deadPeer }) {
		t.Fatal("the dead host is in the final plan")
	}
	ran := lastEntered(end, job.Running)
	if took := ran.Sub(at); took > 2*time.Minute {
		t.Fatalf("the job ran %v after agent %d died: a fetch waited for it", took, killed)
	}
	t.Logf("agent %d killed while serving chunks; the job ran %v later on %d hosts", killed, ran.Sub(at).Round(time.Millisecond), len(end.Plan.Hosts))
}

// lastEntered is when rec last entered state s.
func lastEntered(rec job.Record, s job.State) time.Time {
	var at time.Time
	for _, e := range rec.History {
		if e.State == s {
			at = e.At
		}
	}
	return at
}

// The submitter's upload for 16 hosts, counted in its stats: about the
// file once (at most 3x), the hosts sending each other the rest.
func TestPeerStagingUpload16(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 17 agents and stages 8 MiB to 16 hosts")
	}
	const hosts, size = 16, 8 << 20
	net := stagingNet(t, hosts, 0, true)
	prog, sum := checkedScript(t, net.Nodes[0], size)
	d := job.NewDescription(prog.Name, []string{sum}, hosts)
	d.Require.Labels = []string{stageLabel}
	d.Timeout = 3 * time.Minute
	before := net.Nodes[0].Stats().Staging
	rec := runToEnd(t, net.Nodes[0], d, prog)
	if rec.State != job.Done {
		t.Fatalf("job ended %s: %s", rec.State, rec.Reason)
	}
	after := net.Nodes[0].Stats().Staging
	up := after.ServedAsOwner - before.ServedAsOwner + after.WholeServed - before.WholeServed
	if up <= 0 || up > 3*size {
		t.Fatalf("the submitter uploaded %d bytes of a %d-byte program to %d hosts: want more than 0, at most 3x", up, size, hosts)
	}
	t.Logf("submitter uploaded %d bytes (%.2fx the file) for %d hosts", up, float64(up)/size, hosts)
}
