package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/node"
)

// A job that no number of waiting can place gives its slots back and fails
// as soon as the flood has reached every agent, not at its deadline: a
// second job submitted meanwhile gets the slots and runs.
func TestHopelessJobReleasesEarly(t *testing.T) {
	nodes := agents(t, 3, 2)
	dd := nodes[0].Config().DataDir
	r := zorilla("submit", "--data-dir", dd, "--detach", "--deadline", "5m", "-n", "100000", script(t, "echo never"))
	hoarder := strings.TrimSpace(r.stdout)
	if r.code != 0 || len(hoarder) != 26 {
		t.Fatalf("submit the hoarder: %v", r)
	}
	r = zorilla("submit", "--data-dir", dd, "--deadline", "30s", "-n", "2", script(t, "echo small job ran"))
	if r.code != 0 || strings.Count(r.stdout, "small job ran") != 2 {
		t.Fatalf("a small job did not get the hoarder's slots: %v", r)
	}
	var st result
	waitFor(t, 60*time.Second, "the hoarder fails", func() bool {
		st = zorilla("status", "--data-dir", dd, hoarder)
		return regexp.MustCompile(`(?m)^state\s+failed`).MatchString(st.stdout)
	})
	if !strings.Contains(st.stdout, "the flood reached every agent it could") || !strings.Contains(st.stdout, "3 agents saw the advert: 3 take only jobs of n*r<=4096 processes") {
		t.Errorf("the hoarder's status does not say why it gave up:\n%s", st.stdout)
	}
}

// A job collecting offers holds at most n x r of them plus the spares: a
// dry run of one process on five agents, which keeps collecting for two
// seconds once feasible, lists at most three offers.
func TestOverbookingIsBounded(t *testing.T) {
	nodes := agentsWith(t, 5, 1, func(i int, cfg *node.Config) {
		if i == 0 {
			cfg.Services.Submitter.OfferGrace = 2 * time.Second // every agent's offer is in
		}
	})
	r := zorilla("submit", "--data-dir", nodes[0].Config().DataDir, "--dry-run", "--deadline", "10s", "-n", "1", script(t, "echo never"))
	m := regexp.MustCompile(`offers \(rlist, closest first\): (\d+)`).FindStringSubmatch(r.stdout)
	if r.code != 0 || m == nil {
		t.Fatalf("dry run of n=1 on 5 agents: %v", r)
	}
	if n, _ := strconv.Atoi(m[1]); n < 1 || n > 3 {
		t.Fatalf("the job held %d offers, want at most n x r + 2 spares = 3:\n%s", n, r.stdout)
	}
}
