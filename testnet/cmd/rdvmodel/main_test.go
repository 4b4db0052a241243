package main

import (
	"strings"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/overlay"
)

// TestModelSeeded: the same seed prints the same table.
func TestModelSeeded(t *testing.T) {
	var a, b strings.Builder
	args := []string{"-sizes", "100,300", "-window", "6h"}
	if err := run(args, &a); err != nil {
		t.Fatal(err)
	}
	if err := run(args, &b); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Fatalf("two runs with one seed differ:\n%s\n%s", a.String(), b.String())
	}
	if rows := strings.Count(a.String(), "\n| "); rows != 6 {
		t.Errorf("want a header, a rule and 2 rows per size, got %d lines:\n%s", rows, a.String())
	}
}

// TestModelBounded: under the agents' rule, a network ten times larger
// asks about as much of the DHT's servers once joined: lookups of agents
// that have their peers stay under HealRate (plus the spread of the size
// estimates), provider records stay near Providers, and every agent that
// starts finds one at its first lookup.
func TestModelBounded(t *testing.T) {
	cfg := overlay.DefaultRendezvousConfig(overlay.DefaultNetwork, nil)
	for _, n := range []int{1000, 10000} {
		p := params{n: n, dialable: 0.5, session: 24 * time.Hour, down: time.Minute, fill: 5 * time.Second,
			settle: 5 * time.Minute, noise: 0.5, warm: 48 * time.Hour, window: 12 * time.Hour, seed: 3}
		r := simulate(p, cfg)
		t.Logf("%d agents: %+v", n, r)
		if r.heals > 1.5*cfg.HealRate {
			t.Errorf("%d agents: %.3f heal lookups/s, want about %v at most", n, r.heals, cfg.HealRate)
		}
		if r.records < float64(cfg.Providers)/2 || r.maxRecords > 3*cfg.Providers {
			t.Errorf("%d agents: %.0f records under the key (max %d), want near %d", n, r.records, r.maxRecords, cfg.Providers)
		}
		if r.joins == 0 || r.joined != r.joins {
			t.Errorf("%d agents: %d of %d starts reached an agent at their first lookup", n, r.joined, r.joins)
		}
		// Beyond the heals, about one lookup per start.
		if perStart := (r.lookups - r.heals) * p.window.Seconds() / float64(r.joins); perStart > 1.5 {
			t.Errorf("%d agents: %.2f lookups per start, want about 1", n, perStart)
		}
	}
}

func TestModelRefusesBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-sizes", "1"}, {"-sizes", "ten"}, {"-dialable", "0"}, {"-dialable", "2"},
		{"-session", "10s"}, {"-noise", "-1"}, {"-window", "0s"}, {"-fill", "-1s"},
	} {
		var out strings.Builder
		if err := run(args, &out); err == nil {
			t.Errorf("%v: accepted", args)
		}
	}
}
