package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/job"
)

func TestWriteStatusShowsTimeSharing(t *testing.T) {
	t0 := time.Date(2025, 3, 1, 10, 0, 0, 0, time.Local)
	d := job.NewDescription("/home/u/heat", nil, 2)
	d.Priority, d.MemPerProc = 5, 256<<20
	rec := job.NewRecord("abc", "", d, t0)
	for _, s := range []struct {
		p   job.Phase
		at  time.Duration
		why string
	}{
		{job.PhaseRunning, 0, ""}, {job.PhaseSwapped, 10 * time.Second, "preempted by job xyz"},
		{job.PhaseRunning, 30 * time.Second, ""}, {job.PhaseFrozen, 35 * time.Second, "preempted by job uvw"},
	} {
		rec = job.SwitchPhase(rec, s.p, t0.Add(s.at), s.why)
	}
	var w bytes.Buffer
	writeStatus(&w, rec, t0.Add(40*time.Second))
	for _, s := range []string{
		"sharing  priority 5, memory per process 256M, swap slice 10m0s\n",
		"time     running 15s, frozen 5s, swapped out 20s, once\n",
		"switches: 4\n",
		"  swapped  2025-03-01 10:00:10.000  preempted by job xyz\n",
		"  frozen   2025-03-01 10:00:35.000  preempted by job uvw\n",
	} {
		if !strings.Contains(w.String(), s) {
			t.Errorf("status lacks %q:\n%s", s, w.String())
		}
	}
	plain := job.NewRecord("def", "", job.NewDescription("/bin/true", nil, 1), t0)
	plain = job.SwitchPhase(plain, job.PhaseRunning, t0, "")
	w.Reset()
	writeStatus(&w, plain, t0.Add(time.Second))
	if strings.Contains(w.String(), "switches:") || strings.Contains(w.String(), "sharing") {
		t.Errorf("a job that only ran lists switches or sharing:\n%s", w.String())
	}
}

// Time frozen by gang slices shows as frozen, with its share named.
func TestWriteStatusShowsSlicedTime(t *testing.T) {
	t0 := time.Date(2025, 3, 1, 10, 0, 0, 0, time.Local)
	rec := job.NewRecord("abc", "", job.NewDescription("/home/u/heat", nil, 2), t0)
	rec.Runs = []job.Run{{Attempt: 1, Started: t0}}
	rec = job.SwitchPhase(rec, job.PhaseRunning, t0, "")
	rec = job.AddSliced(rec, 30*time.Second, t0.Add(40*time.Second))
	var w bytes.Buffer
	writeStatus(&w, rec, t0.Add(40*time.Second))
	if s := "time     running 10s, frozen 30s (30s of it by time slices), swapped out 0s\n"; !strings.Contains(w.String(), s) {
		t.Errorf("status lacks %q:\n%s", s, w.String())
	}
}
