package main

import (
	"strings"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/job/submitter"
	"github.com/zorilla-p2p/zorilla/node"
)

// TestPMISpreadOnIsolatingAgents: an MPICH job spread over agents whose
// jobs see only loopback (the default as root) is declined at the advert
// by every agent, so the submitter fails within 10 s (the default flood
// schedule) and says why in one line, naming the setting that allows it;
// it never waits on the hosts as silent.
func TestPMISpreadOnIsolatingAgents(t *testing.T) {
	nodes := agentsWith(t, 4, 2, func(_ int, cfg *node.Config) {
		cfg.JobNetwork = node.JobNetworkIsolated
		cfg.Services.Submitter = submitter.DefaultConfig()
	})
	if !strings.HasPrefix(nodes[0].Sandbox().Network, "own") {
		t.Skipf("this machine gives jobs no network namespace (%s): the agents do not isolate", nodes[0].Sandbox().Network)
	}
	prog := script(t, "exit 0")
	start := time.Now()
	r := zorilla("submit", "--data-dir", nodes[0].Config().DataDir, "--pmi", "-n", "4", "-a", "spread", prog)
	took := time.Since(start)
	var why []string
	for _, l := range strings.Split(r.stderr, "\n") {
		if strings.Contains(l, "--job-network host") {
			why = append(why, l)
		}
	}
	if r.code != 1 || len(why) != 1 || !strings.Contains(why[0], " failed ") || !strings.Contains(why[0], "4 give jobs only loopback") ||
		strings.Contains(r.stderr, "silent") {
		t.Fatalf("want a failure saying once why, naming --job-network host; got %v", r)
	}
	if took > 10*time.Second {
		t.Errorf("the job failed after %v, want within 10 s:\n%v", took, r)
	}
	t.Logf("failed in %v: %s", took.Round(time.Millisecond), why[0])
}
