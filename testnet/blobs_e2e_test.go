package testnet

import (
	"testing"

	"github.com/zorilla-p2p/zorilla/internal/blob"
	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/node"
)

// Workers do not keep the programs they fetched: once a job ends, every
// agent but its submitter has removed the job's program from its blob
// store (bounded: a worker that kept them all would refuse jobs once
// full), and the submitter still holds it for the next submit.
func TestWorkersDropFetchedBlobs(t *testing.T) {
	const agents, cores = 3, 2
	net := startLoopback(t, agents, func(_ int, cfg *node.Config) { e2eConfig(cfg, cores) })
	connected(t, net, 2)
	s := net.Nodes[0]
	prog := upload(t, s, "exit 0")
	h, err := blob.ParseHash(prog.Hash)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second run fetches again what the first removed
		d := job.NewDescription("job.sh", nil, agents*cores)
		d.Strategy = job.Concentrate
		rec := awaitEnd(t, s, submit(t, s, d, prog, false))
		if rec.State != job.Done {
			t.Fatalf("job ended %s: %s", rec.State, rec.Reason)
		}
		awaitNet(t, net, "the workers removed the program they fetched", func() bool {
			for _, nd := range net.Nodes[1:] {
				if nd.Blobs().Has(h) {
					return false
				}
			}
			return true
		})
		if !s.Blobs().Has(h) {
			t.Fatal("the submitter lost its own upload")
		}
	}
}
