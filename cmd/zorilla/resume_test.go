package main

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestResumeFollowsTheJob: a job of examples/heat stopped with a
// checkpoint and resumed is followed as submit follows a job: its output
// tagged by rank, a notice of the resume, and the job's exit status. With
// --detach the command returns at once, saying how to follow it.
func TestResumeFollowsTheJob(t *testing.T) {
	if testing.Short() {
		t.Skip("builds examples/heat and runs it")
	}
	nodes := agents(t, 2, 2)
	dd := nodes[0].Config().DataDir
	heat := exampleBinary(t, "heat")
	stopped := func() string {
		sub := zorilla("submit", "--data-dir", dd, "--detach", "-n", "2", heat, "300", "20", "3000")
		id := strings.TrimSpace(sub.stdout)
		if sub.code != 0 || id == "" {
			t.Fatalf("submit: %v", sub)
		}
		// The stop is refused until every rank is in mpi.Init.
		waitFor(t, time.Minute, "the stop", func() bool {
			return zorilla("stop", id, "--checkpoint", "--timeout", "20s", "--data-dir", dd).code == 0
		})
		return id
	}

	id := stopped()
	r := zorilla("resume", id, "--data-dir", dd)
	if r.code != 0 || !regexp.MustCompile(`(?m)^\[0\] heat OK [0-9a-f]{16}$`).MatchString(r.stdout) ||
		!strings.Contains(r.stdout, "heat: restarted at step ") {
		t.Fatalf("resume: want the resumed run's output and exit 0, got %v", r)
	}
	for _, want := range []string{"zorilla: resuming from checkpoint ", "zorilla: job " + id + " done"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("resume's stderr lacks %q:\n%v", want, r)
		}
	}

	id = stopped()
	d := zorilla("resume", id, "--detach", "--data-dir", dd)
	if d.code != 0 || !regexp.MustCompile(`^job `+id+` resumed from checkpoint \d+ at .*; follow it with zorilla status `+id+"\n$").MatchString(d.stdout) {
		t.Fatalf("resume --detach: %v", d)
	}
	w := zorilla("status", id, "--watch", "--data-dir", dd)
	if w.code != 0 || !strings.Contains(w.stdout, "heat OK") {
		t.Errorf("the detached resumed job: %v", w)
	}
}
