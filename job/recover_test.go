package job

import (
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// recordAt walks a record through the given states and attaches a plan.
func recordAt(t *testing.T, p Plan, states ...State) Record {
	t.Helper()
	at := time.Unix(0, 0)
	r := NewRecord("j", "", NewDescription("p", nil, p.N), at)
	for _, s := range states {
		var err error
		if r, err = Transition(r, s, at, ""); err != nil {
			t.Fatal(err)
		}
	}
	r.Plan = &p
	return r
}

func TestRecover(t *testing.T) {
	four, err := Place(Concentrate, hosts("A:4", "B:4", "C:4", "D:4"), 8, 1)
	if err != nil {
		t.Fatal(err)
	}
	repl, err := Place(Spread, hosts("A:2", "B:2", "C:2", "D:2"), 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	rp := DefaultRetryPolicy()
	tests := []struct {
		name   string
		r      Record
		f      FailureKind
		failed []peer.ID
		want   Action
		state  State
		reason string
		hosts  string // layout of the new plan, for RetryStart

		restart bool
		backoff time.Duration
	}{
		{name: "silent host: retry on the spare", r: recordAt(t, four, Reserving, Starting), f: HostSilent,
			failed: []peer.ID{"B"}, want: RetryStart, state: Starting, hosts: "A:0.0,1.0,2.0,3.0 C:4.0,5.0,6.0,7.0"},
		{name: "start timeout: retry on the same hosts", r: recordAt(t, four, Reserving, Starting), f: StartTimeout,
			want: RetryStart, state: Starting, hosts: "A:0.0,1.0,2.0,3.0 B:4.0,5.0,6.0,7.0"},
		{name: "second start failure: match again", r: recordAt(t, four, Reserving, Starting, Starting), f: StartTimeout,
			want: Rematch, state: Reserving, reason: "match again"},
		{name: "no spare left: match again", r: recordAt(t, four, Reserving, Starting), f: HostSilent,
			failed: []peer.ID{"B", "C", "D"}, want: Rematch, state: Reserving},
		{name: "matched too often: fail", r: recordAt(t, four, Reserving, Starting, Reserving, Starting, Reserving, Starting, Starting),
			f: HostSilent, failed: []peer.ID{"A"}, want: Fail, state: Failed, reason: "gave up after 3 matches"},
		{name: "host lost, r=2, copies survive", r: recordAt(t, repl, Reserving, Starting, Running), f: HostLost,
			failed: []peer.ID{"A", "B"}, want: Continue, state: Running, reason: "replicas continue"},
		{name: "host lost, r=2, both copies of rank 0 gone", r: recordAt(t, repl, Reserving, Starting, Running), f: HostLost,
			failed: []peer.ID{"A", "C"}, want: Rematch, state: Reserving, restart: true, backoff: 2 * time.Second},
		{name: "host lost, r=1: restart", r: recordAt(t, four, Reserving, Starting, Running), f: HostLost,
			failed: []peer.ID{"A"}, want: Rematch, state: Reserving, reason: "restart 1 of 2", restart: true, backoff: 2 * time.Second},
		{name: "host lost again: second restart waits longer", r: restarted(recordAt(t, four, Reserving, Starting, Running, Reserving, Starting, Running), 1, 2),
			f: HostLost, failed: []peer.ID{"B"}, want: Rematch, state: Reserving, reason: "restart 2 of 2", restart: true, backoff: 4 * time.Second},
		{name: "host lost, retries used: fail", r: restarted(recordAt(t, four, Reserving, Starting, Running), 2, 2), f: HostLost,
			failed: []peer.ID{"A"}, want: Fail, state: Failed, reason: "its 2 retries are used"},
		{name: "host lost, retries 0: fail", r: restarted(recordAt(t, four, Reserving, Starting, Running), 0, 0), f: HostLost,
			failed: []peer.ID{"A"}, want: Fail, state: Failed, reason: "not started again (retries 0)"},
		{name: "restarted job: start failures match afresh", r: restarted(recordAt(t, four, Reserving, Starting, Reserving, Starting, Reserving, Starting, Starting), 1, 2),
			f: HostSilent, failed: []peer.ID{"A"}, want: Rematch, state: Reserving},
		{name: "bad program on one host: try a spare", r: badOn(recordAt(t, four, Reserving, Starting), "B"), f: BadProgram,
			failed: []peer.ID{"B"}, want: RetryStart, state: Starting, hosts: "A:0.0,1.0,2.0,3.0 C:4.0,5.0,6.0,7.0"},
		{name: "bad program on a second host: fail at once", r: badOn(recordAt(t, four, Reserving, Starting, Starting), "B", "C"), f: BadProgram,
			failed: []peer.ID{"C"}, want: Fail, state: Failed, reason: "2 hosts said so"},
		{name: "bad program twice on one host: a new match", r: badOn(recordAt(t, four, Reserving, Starting, Starting), "B"), f: BadProgram,
			failed: []peer.ID{"B"}, want: Rematch, state: Reserving},
		{name: "leases expired before the commit: match again at once", r: recordAt(t, four, Reserving, Starting), f: LeaseExpired,
			failed: []peer.ID{"A", "B"}, want: Rematch, state: Reserving, reason: "lease-expired on 2 hosts (start 1): match again"},
		{name: "leases expired, matched too often: fail", r: recordAt(t, four, Reserving, Starting, Reserving, Starting, Reserving, Starting),
			f: LeaseExpired, failed: []peer.ID{"A"}, want: Fail, state: Failed, reason: "gave up after 3 matches"},
		{name: "rank failed", r: recordAt(t, four, Reserving, Starting, Running), f: RankFailed,
			want: Fail, state: Failed, reason: "rank 3 exited with status 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkRecovery(t, tt.r, Recover(tt.r, Failure{Kind: tt.f, Hosts: tt.failed, Rank: 3, Code: 2}, rp),
				tt.want, tt.state, tt.reason, tt.hosts, tt.restart, tt.backoff)
		})
	}
}

// checkRecovery compares a recovery with the one wanted, and checks that
// its state can be reached from the record's.
func checkRecovery(t *testing.T, r Record, rec Recovery, want Action, state State, reason, hosts string, restart bool, backoff time.Duration) {
	t.Helper()
	if rec.Action != want || rec.State != state || !strings.Contains(rec.Reason, reason) {
		t.Fatalf("Recover = %s -> %s (%q), want %s -> %s (%q)", rec.Action, rec.State, rec.Reason, want, state, reason)
	}
	if rec.Restart != restart || rec.Backoff != backoff {
		t.Errorf("restart %v after %v, want %v after %v", rec.Restart, rec.Backoff, restart, backoff)
	}
	if hosts != "" {
		if got, _ := layout(rec.Plan); got != hosts {
			t.Errorf("new plan %q, want %q", got, hosts)
		}
	}
	if rec.Action != Continue {
		if _, err := Transition(r, rec.State, time.Unix(1, 0), rec.Reason); err != nil {
			t.Errorf("the recovery's state is not reachable: %v", err)
		}
	}
}

// badOn records that the given hosts could not start r's program.
func badOn(r Record, hosts ...peer.ID) Record {
	r.BadProgram = hosts
	return r
}

// restarted gives r a job's restarts so far and its retries.
func restarted(r Record, restarts, retries int) Record {
	r.Restarts, r.Desc.Retries = restarts, retries
	return r
}

func TestBackoff(t *testing.T) {
	rp := RetryPolicy{Backoff: time.Second, MaxBackoff: 5 * time.Second}
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 5 * time.Second, 40: 5 * time.Second} {
		if got := rp.backoff(n); got != want {
			t.Errorf("backoff(%d) = %v, want %v", n, got, want)
		}
	}
}

func TestAppendRun(t *testing.T) {
	var runs []Run
	for i := 1; i <= MaxRuns+5; i++ {
		runs = AppendRun(runs, Run{Attempt: i})
	}
	if len(runs) != MaxRuns || runs[0].Attempt != 1 || runs[1].Attempt != 7 || runs[len(runs)-1].Attempt != MaxRuns+5 {
		t.Fatalf("%d runs, attempts %d, %d ... %d: want %d, the first and the latest", len(runs), runs[0].Attempt, runs[1].Attempt, runs[len(runs)-1].Attempt, MaxRuns)
	}
}

func TestTransitionCounters(t *testing.T) {
	r := recordAt(t, Plan{N: 1, R: 1}, Reserving, Starting, Starting, Reserving, Starting)
	if r.Attempts != 3 || r.Matches != 2 || r.Starts != 1 {
		t.Fatalf("attempts %d matches %d starts %d", r.Attempts, r.Matches, r.Starts)
	}
}
