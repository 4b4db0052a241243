package main

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/test"
	"github.com/urfave/cli/v2"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// status, jobs and cancel on a real agent: a detached job is listed and
// shown while it runs (found by an ID prefix), cancelled, and then shown
// as cancelled; a second cancel and an unknown job are errors.
func TestStatusJobsCancel(t *testing.T) {
	nodes := agents(t, 1, 2)
	dd := nodes[0].Config().DataDir
	r := zorilla("submit", "--data-dir", dd, "--detach", "-n", "2", "-a", "concentrate", script(t, "exec sleep 30"))
	id := strings.TrimSpace(r.stdout)
	if r.code != 0 {
		t.Fatalf("submit: %v", r)
	}
	waitFor(t, 20*time.Second, "the job runs", func() bool {
		return regexp.MustCompile(`(?m)^state\s+running since`).MatchString(zorilla("status", "--data-dir", dd, id).stdout)
	})
	jobs := zorilla("jobs", "--data-dir", dd)
	if !regexp.MustCompile(id + `\s+running\s+2 x 1\s+\S+ \S+\s+-\s+prog.sh`).MatchString(jobs.stdout) {
		t.Errorf("jobs:\n%v", jobs)
	}
	if noArg := zorilla("status", "--data-dir", dd); noArg.stdout != jobs.stdout {
		t.Errorf("status without JOB is not the jobs table:\n%v", noArg)
	}
	st := zorilla("status", "--data-dir", dd, id[:8])
	for _, want := range []string{"job      " + id, "size     n=2 r=1 concentrate", "hosts: 1 (concentrate)",
		nodes[0].ID().String(), "ranks 0 1", "  reserving  ", "  starting  ", "  running  "} {
		if !strings.Contains(st.stdout, want) {
			t.Errorf("status lacks %q:\n%v", want, st)
		}
	}
	// A program without the MPI library cannot be stopped with a
	// checkpoint, and a running job cannot be resumed: both say why.
	if s := zorilla("stop", id, "--data-dir", dd, "--checkpoint", "--timeout", "1s"); s.code != 1 || !strings.Contains(s.stderr, "not every rank is in mpi.Init") {
		t.Errorf("stop of a job without the MPI library: %v", s)
	}
	if s := zorilla("resume", id, "--elsewhere", "--data-dir", dd); s.code != 1 || !strings.Contains(s.stderr, "not stopped") {
		t.Errorf("resume of a running job: %v", s)
	}
	if c := zorilla("cancel", id[:8], "--data-dir", dd); c.code != 0 || c.stdout != "job "+id+" cancelled\n" {
		t.Fatalf("cancel: %v", c)
	}
	st = zorilla("status", "--data-dir", dd, id)
	if !regexp.MustCompile(`(?m)^state\s+cancelled since`).MatchString(st.stdout) || !strings.Contains(st.stdout, "reason   cancelled by the user") ||
		!regexp.MustCompile(`(?m)^  cancelled  .*cancelled by the user`).MatchString(st.stdout) {
		t.Errorf("status after cancel:\n%v", st)
	}
	if again := zorilla("cancel", "--data-dir", dd, id); again.code != 1 || !strings.Contains(again.stderr, "already ended: cancelled") {
		t.Errorf("second cancel: %v", again)
	}
	if unknown := zorilla("status", "--data-dir", dd, "zzzz"); unknown.code != 1 || !strings.Contains(unknown.stderr, "no job zzzz") {
		t.Errorf("unknown job: %v", unknown)
	}
}

func TestWriteStatusShowsHistoryHostsAndRanks(t *testing.T) {
	a, b := testPeer(t), testPeer(t)
	t0 := time.Date(2025, 3, 1, 10, 0, 0, 0, time.Local)
	d := job.NewDescription("/home/u/ring", []string{"-size", "8"}, 3)
	d.Replicas, d.Strategy = 2, job.Concentrate
	rec := job.NewRecord("abc", "", d, t0)
	for i, st := range []job.State{job.Reserving, job.Starting, job.Running, job.Failed} {
		var err error
		why := ""
		if st == job.Failed {
			why = "rank 2 exited with status 4"
		}
		if rec, err = job.Transition(rec, st, t0.Add(time.Duration(i+1)*250*time.Millisecond), why); err != nil {
			t.Fatal(err)
		}
	}
	rec.Exit = 4
	rec.Plan = &job.Plan{N: 3, R: 2, Strategy: job.Concentrate, Hosts: []job.HostPlan{
		{Offer: job.Offer{Peer: a, RTT: 300 * time.Microsecond}, Procs: procs(0, 0, 1, 0, 2, 0)},
		{Offer: job.Offer{Peer: b, RTT: 2 * time.Millisecond}, Procs: procs(0, 1, 1, 1, 2, 1)},
	}}
	var w bytes.Buffer
	writeStatus(&w, rec, t0.Add(time.Hour))
	want := []string{
		"job      abc\n",
		"program  /home/u/ring -size 8\n",
		"size     n=3 r=2 concentrate\n",
		"state    failed since 2025-03-01 10:00:01.000\n",
		"exit     4\n",
		"reason   rank 2 exited with status 4\n",
		"  waiting    2025-03-01 10:00:00.000",
		"  starting   2025-03-01 10:00:00.500  +250ms",
		"  failed     2025-03-01 10:00:01.000  +250ms  rank 2 exited with status 4\n",
		"hosts: 2 (concentrate)\n",
		"  " + a.String() + "  rtt 300µs  ranks 0 1 2\n",
		"  " + b.String() + "  rtt 2ms    ranks 0.1 1.1 2.1\n",
	}
	for _, s := range want {
		if !strings.Contains(w.String(), s) {
			t.Errorf("status lacks %q:\n%s", s, w.String())
		}
	}
}

// A cancelled job's status shows the status submit exited with (130),
// not the 0 of a rank that never failed; a job that failed with no rank
// failing shows 1, as submit exits.
func TestWriteStatusExitAgreesWithSubmit(t *testing.T) {
	t0 := time.Date(2025, 3, 1, 10, 0, 0, 0, time.Local)
	for _, tc := range []struct {
		state job.State
		exit  int
		want  string
	}{
		{job.Cancelled, 0, "exit     130 (cancelled)\n"},
		{job.Failed, 0, "exit     1\n"},
		{job.Failed, 3, "exit     3\n"},
		{job.Done, 0, "exit     0\n"},
	} {
		rec := job.NewRecord("abc", "", job.NewDescription("/home/u/ring", nil, 2), t0)
		var err error
		if rec, err = job.Transition(rec, job.Reserving, t0.Add(time.Second), ""); err != nil {
			t.Fatal(err)
		}
		if tc.state == job.Done {
			rec, _ = job.Transition(rec, job.Starting, t0.Add(2*time.Second), "")
			rec, _ = job.Transition(rec, job.Running, t0.Add(3*time.Second), "")
		}
		if rec, err = job.Transition(rec, tc.state, t0.Add(4*time.Second), "why"); err != nil {
			t.Fatal(err)
		}
		rec.Exit = tc.exit
		var w bytes.Buffer
		writeStatus(&w, rec, t0.Add(time.Hour))
		if !strings.Contains(w.String(), tc.want) {
			t.Errorf("%s with exit %d: status lacks %q:\n%s", tc.state, tc.exit, tc.want, w.String())
		}
		if got, want := exitCodeOf(jobExit(rec)), strings.Fields(tc.want)[1]; fmt.Sprint(got) != want {
			t.Errorf("%s with exit %d: submit exits %d, status says %s", tc.state, tc.exit, got, want)
		}
	}
}

func TestWriteStatusListsAttempts(t *testing.T) {
	a, b, c := testPeer(t), testPeer(t), testPeer(t)
	t0 := time.Date(2025, 3, 1, 10, 0, 0, 0, time.Local)
	rec := job.NewRecord("abc", "", job.NewDescription("/home/u/ring", nil, 2), t0)
	rec.Runs = []job.Run{
		{Attempt: 1, Started: t0, Ended: t0.Add(time.Second), Hosts: []peer.ID{a, b}, End: "host 12D3…abcd lost while running (agent unreachable)"},
		{Attempt: 2, Started: t0.Add(3 * time.Second), Hosts: []peer.ID{a, c}, From: 7},
	}
	rec.Checkpoints = []job.Checkpoint{
		{Num: 7, Taken: t0.Add(time.Second / 2), Attempt: 1, Complete: true, Files: []job.CheckpointFile{{Rank: 0, Size: 1 << 20}, {Rank: 1, Size: 1 << 20}}},
		{Num: 8, Taken: t0.Add(4 * time.Second), Attempt: 2, Files: []job.CheckpointFile{{Rank: 1, Size: 1 << 20}}},
	}
	var w bytes.Buffer
	writeStatus(&w, rec, t0.Add(time.Hour))
	want := []string{
		"attempts: 2\n",
		"  1  2025-03-01 10:00:00.000  from scratch       " + shortPeer(a) + " " + shortPeer(b) + "  host 12D3…abcd lost while running (agent unreachable)\n",
		"  2  2025-03-01 10:00:03.000  from checkpoint 7  " + shortPeer(a) + " " + shortPeer(c) + "  running\n",
		"checkpoints: 2\n",
		"  7  2025-03-01 10:00:00.500  attempt 1  2M  complete\n",
		"  8  2025-03-01 10:00:04.000  attempt 2  1M  1 of 2 ranks\n",
	}
	for _, s := range want {
		if !strings.Contains(w.String(), s) {
			t.Errorf("status lacks %q:\n%s", s, w.String())
		}
	}
	rec.Runs = rec.Runs[:1]
	w.Reset()
	writeStatus(&w, rec, t0.Add(time.Hour))
	if strings.Contains(w.String(), "attempts:") {
		t.Errorf("a job started once lists its attempt:\n%s", w.String())
	}
}

func TestWriteJobs(t *testing.T) {
	var w bytes.Buffer
	writeJobs(&w, nil)
	if w.String() != "no jobs\n" {
		t.Errorf("empty list: %q", w.String())
	}
	t0 := time.Date(2025, 3, 1, 10, 0, 0, 0, time.Local)
	done := job.NewRecord("one", "", job.NewDescription("/x/prog", []string{"A"}, 4), t0)
	done.State, done.Exit = job.Done, 0
	dry := job.NewRecord("two", "", job.NewDescription("/x/prog", nil, 2), t0.Add(time.Minute))
	dry.State, dry.DryRun = job.Reserving, true
	cancelled := job.NewRecord("three", "", job.NewDescription("/x/prog", nil, 1), t0.Add(2*time.Minute))
	cancelled.State = job.Cancelled
	unplaced := job.NewRecord("four", "", job.NewDescription("/x/prog", nil, 1), t0.Add(3*time.Minute))
	unplaced.State = job.Failed // no rank ran: submit exits 1
	w.Reset()
	writeJobs(&w, []job.Record{done, dry, cancelled, unplaced})
	want := "ID     STATE                N x R  CREATED              EXIT             PROGRAM\n" +
		"one    done                 4 x 1  2025-03-01 10:00:00  0                prog A\n" +
		"two    reserving (dry run)  2 x 1  2025-03-01 10:01:00  -                prog\n" +
		"three  cancelled            1 x 1  2025-03-01 10:02:00  130 (cancelled)  prog\n" +
		"four   failed               1 x 1  2025-03-01 10:03:00  1                prog\n"
	if w.String() != want {
		t.Errorf("jobs table\n got:\n%s\nwant:\n%s", w.String(), want)
	}
}

// The dry run's table is the rlist in order, with what the strategy would
// place on each host; an infeasible request says why.
func TestWriteDryRun(t *testing.T) {
	a, b, c := testPeer(t), testPeer(t), testPeer(t)
	rec := job.NewRecord("dry", "", job.NewDescription("/x/prog", nil, 3), time.Now())
	rec.State, rec.DryRun = job.Done, true
	rec.Offers = []job.Offer{
		{Peer: a, Lease: "la", Slots: 2, Cores: 2, Memory: 1 << 30, RTT: 0},
		{Peer: b, Lease: "lb", Slots: 4, Cores: 4, Memory: 2 << 30, RTT: 400 * time.Microsecond},
		{Peer: c, Lease: "lc", Slots: 1, Cores: 1, RTT: 3 * time.Millisecond}, // the job asked no memory
	}
	var w bytes.Buffer
	if err := writeDryRun(&w, rec); err != nil {
		t.Fatalf("feasible dry run: %v", err)
	}
	for _, s := range []string{"offers (rlist, closest first): 3",
		"1  " + a.String() + "  2      2      1G      0s     1",
		"2  " + b.String() + "  4      4      2G      400µs  1",
		"3  " + c.String() + "  1      1      -       3ms    1",
		"feasible: n=3 r=1 spread on 3 of 3 hosts"} {
		if !strings.Contains(w.String(), s) {
			t.Errorf("dry run lacks %q:\n%s", s, w.String())
		}
	}
	rec.Desc.Nodes, rec.Desc.Replicas = 2, 4
	w.Reset()
	if err := writeDryRun(&w, rec); err == nil || !strings.Contains(w.String(), "not feasible: n=2 r=4") || !strings.Contains(w.String(), "r=4 distinct hosts") {
		t.Errorf("infeasible dry run: %v\n%s", err, w.String())
	}
}

// The printer tags output by rank (and copy), keeps the streams apart, and
// prints state changes and the agent's notes on stderr.
func TestPrinter(t *testing.T) {
	var out, errw bytes.Buffer
	p := newPrinter(&out, &errw, "j1")
	rec := job.Record{ID: "j1", State: job.Done}
	for _, u := range []job.Update{
		{Kind: "state", State: job.Running},
		{Kind: "output", Rank: 0, Stream: "stdout", Line: "hello"},
		{Kind: "output", Rank: 2, Replica: 1, Stream: "stdout", Line: "copy"},
		{Kind: "output", Rank: 1, Stream: "stderr", Line: "warn"},
		{Kind: "output", Rank: -1, Stream: "stderr", Note: "output skipped: watcher fell behind"},
		{Kind: "state", State: job.Failed, Note: "rank 1 exited with status 2"},
		{Kind: "end", State: job.Done, Record: &rec},
	} {
		p.update(u)
	}
	if out.String() != "[0] hello\n[2.1] copy\n" {
		t.Errorf("stdout %q", out.String())
	}
	for _, re := range []string{`^zorilla: job j1 running \(\+\d+m?s\)\n`, `(?m)^\[1\] warn$`,
		`(?m)^zorilla: output skipped: watcher fell behind$`, `(?m)^zorilla: job j1 failed \(\+.*\): rank 1 exited with status 2$`} {
		if !regexp.MustCompile(re).MatchString(errw.String()) {
			t.Errorf("stderr does not match %s:\n%s", re, errw.String())
		}
	}
	if got, ok := p.end(); !ok || got.ID != "j1" {
		t.Errorf("end record %v %v", got, ok)
	}
}

func TestJobExitCodes(t *testing.T) {
	for _, c := range []struct {
		rec  job.Record
		code int
	}{
		{job.Record{State: job.Done}, 0},
		{job.Record{State: job.Failed, Exit: 7}, 7},
		{job.Record{State: job.Failed}, 1},
		{job.Record{State: job.Cancelled}, 130},
	} {
		got := exitCodeOf(jobExit(c.rec))
		if got != c.code {
			t.Errorf("%s exit %d: command exits %d, want %d", c.rec.State, c.rec.Exit, got, c.code)
		}
	}
}

func testPeer(t *testing.T) peer.ID {
	t.Helper()
	id, err := test.RandPeerID()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// exitCodeOf is the exit status run gives for an action's error.
func exitCodeOf(err error) int {
	if err == nil {
		return 0
	}
	var coder cli.ExitCoder
	if errors.As(err, &coder) {
		return coder.ExitCode()
	}
	return 1
}

// procs reads pairs of rank, replica.
func procs(rr ...int) []proto.Proc {
	var ps []proto.Proc
	for i := 0; i+1 < len(rr); i += 2 {
		ps = append(ps, proto.Proc{Rank: rr[i], Replica: rr[i+1]})
	}
	return ps
}

// The MPI failure every rank of a failed job prints is shown once, then
// counted; other stderr lines, and stdout, are never folded.
func TestPrinterSaysTheFailureOnce(t *testing.T) {
	var out, errw bytes.Buffer
	p := newPrinter(&out, &errw, "j1")
	rec := job.Record{ID: "j1", State: job.Failed}
	for _, u := range []job.Update{
		{Kind: "output", Rank: 0, Stream: "stderr", Line: "rank 0: recv: mpi: job failed: rank 1 exited with 3"},
		{Kind: "output", Rank: 2, Stream: "stderr", Line: "rank 2: send: mpi: job failed: rank 1 exited with 3"},
		{Kind: "output", Rank: 3, Stream: "stderr", Line: "rank 3: recv: mpi: job failed: rank 1 exited with 3"},
		{Kind: "output", Rank: 3, Stream: "stderr", Line: "warn"},
		{Kind: "output", Rank: 2, Stream: "stderr", Line: "warn"},
		{Kind: "output", Rank: 2, Stream: "stdout", Line: "mpi: job failed: rank 1 exited with 3"},
		{Kind: "state", State: job.Failed, Note: "rank 1 exited with status 3 on host 12D3KooW…abcdef"},
		{Kind: "end", State: job.Failed, Record: &rec},
	} {
		p.update(u)
	}
	if strings.Count(errw.String(), "mpi: job failed") != 1 || strings.Count(errw.String(), "warn") != 2 {
		t.Errorf("stderr:\n%s", errw.String())
	}
	if !strings.Contains(errw.String(), "zorilla: 2 more ranks printed the same MPI failure") {
		t.Errorf("the repeats are not counted:\n%s", errw.String())
	}
	if out.String() != "[2] mpi: job failed: rank 1 exited with 3\n" {
		t.Errorf("stdout %q", out.String())
	}
}
