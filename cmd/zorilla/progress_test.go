package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

func TestProgressLines(t *testing.T) {
	samples := []job.FloodSample{
		{Radius: 1, Offers: 0, Slots: 0, Need: 8},
		{Radius: 1, Offers: 1, Slots: 2, Need: 8}, // same radius, not enough: no plain line
		{Radius: 2, Offers: 3, Slots: 6, Need: 8},
		{Radius: 2, Offers: 4, Slots: 8, Need: 8}, // enough for the first time
		{Radius: 2, Offers: 5, Slots: 10, Need: 8},
	}
	for _, tc := range []struct {
		tty  bool
		want []string
	}{
		{false, []string{"radius 1, 0 offers, 0/8 slots", "radius 2, 3 offers, 6/8 slots", "radius 2, 4 offers, 8/8 slots"}},
		{true, []string{"radius 1, 0 offers", "radius 1, 1 offers", "radius 2, 3 offers", "radius 2, 4 offers", "radius 2, 5 offers, 10/8 slots"}},
	} {
		var b bytes.Buffer
		p := &progress{w: &b, tty: tc.tty, start: time.Now()}
		for _, s := range samples {
			p.sample(s)
		}
		p.clear()
		out := b.String()
		sep := "\n"
		if tc.tty {
			sep = "\r\x1b[K"
			if strings.Contains(out, "\n") {
				t.Errorf("tty: a newline in %q: the line must be rewritten in place", out)
			}
		}
		var got []string
		for _, l := range strings.Split(out, sep) {
			if l != "" {
				got = append(got, l)
			}
		}
		if len(got) != len(tc.want) {
			t.Fatalf("tty %v: %d lines %q, want %d", tc.tty, len(got), got, len(tc.want))
		}
		for i, w := range tc.want {
			if !strings.HasPrefix(got[i], "zorilla: placing: ") || !strings.Contains(got[i], w) {
				t.Errorf("tty %v: line %d %q, want %q", tc.tty, i, got[i], w)
			}
		}
		if tc.tty && !strings.HasSuffix(out, "\r\x1b[K") {
			t.Errorf("tty: clear did not erase the line: %q", out)
		}
	}
}

func TestPlacementSummary(t *testing.T) {
	a, b := peer.ID("aaaaaaaaaaaa"), peer.ID("bbbbbbbbbbbb")
	plan := job.Plan{N: 3, R: 1, Strategy: job.Spread, Hosts: []job.HostPlan{
		{Offer: job.Offer{Peer: a, RTT: 1500 * time.Microsecond}, Procs: []proto.Proc{{Rank: 0}, {Rank: 2}}},
		{Offer: job.Offer{Peer: b, RTT: 20 * time.Millisecond}, Procs: []proto.Proc{{Rank: 1}}},
	}}
	got := placementSummary(plan)
	for _, want := range []string{"placed 3 x 1 spread on 2 hosts", "1.5ms  ranks 0 2", "20ms  ranks 1"} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
}

// submit prints the flood's progress and the placement (plain lines, not
// on a terminal); status --watch follows a job to its end.
func TestSubmitProgressAndStatusWatch(t *testing.T) {
	nodes := agents(t, 2, 2)
	prog := script(t, `echo "hi $ZORILLA_RANK"`)
	dir := nodes[0].Config().DataDir
	r := zorilla("submit", "--data-dir", dir, "-n", "3", "-a", "concentrate", prog)
	if r.code != 0 {
		t.Fatalf("submit: %v", r)
	}
	for _, want := range []string{"zorilla: placing: radius 1, ", "zorilla: placed 3 x 1 concentrate on 2 hosts", "ranks 0 1"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("submit's stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if strings.Contains(r.stderr, "\x1b[K") {
		t.Errorf("escape codes off a terminal:\n%q", r.stderr)
	}
	jobs := zorilla("jobs", "--data-dir", dir)
	id := strings.Fields(strings.Split(jobs.stdout, "\n")[1])[0]
	w := zorilla("status", id, "--watch", "--data-dir", dir) // flags after the job, as the docs write them
	if w.code != 0 || !strings.Contains(w.stdout, "[2] hi 2") || !strings.Contains(w.stdout, "state    done") {
		t.Errorf("status --watch: %v", w)
	}
	if u := zorilla("status", "--data-dir", dir, "--watch"); u.code != 2 {
		t.Errorf("status --watch without a job: %v", u)
	}
}
