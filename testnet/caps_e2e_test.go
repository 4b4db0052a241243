package testnet

import (
	"testing"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/node"
	"github.com/zorilla-p2p/zorilla/worker"
)

// An agent whose owner caps jobs at 3 processes makes no offer to a job of
// 4: the job runs on the other agents, and the refusal is in the capped
// agent's stats.
func TestJobSizeCap(t *testing.T) {
	const agents, cores, capped = 3, 2, 2
	net := startLoopback(t, agents, func(i int, cfg *node.Config) {
		e2eConfig(cfg, cores)
		if i == capped {
			cfg.Services.Worker.Abuse.MaxJobProcs = 3
		}
	})
	connected(t, net, 2)
	s := net.Nodes[0]
	d := job.NewDescription("job.sh", nil, 4)
	d.Strategy = job.Spread
	rec := awaitEnd(t, s, submit(t, s, d, upload(t, s, "exit 0"), false))
	if rec.State != job.Done {
		t.Fatalf("job ended %s: %s", rec.State, rec.Reason)
	}
	if hosts := planHosts(t, net, rec.Plan); hosts[capped] != 0 || len(hosts) != 2 {
		t.Fatalf("plan %v: want agents 0 and 1 only", hosts)
	}
	if got := net.Nodes[capped].Stats().Refused[worker.RefusedJobTooLarge]; got == 0 {
		t.Fatalf("capped agent's refusals %v: want %s", net.Nodes[capped].Stats().Refused, worker.RefusedJobTooLarge)
	}
}
