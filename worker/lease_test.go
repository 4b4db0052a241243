package worker

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/internal/gang"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newTable(t *testing.T, p Policy) (*Leases, *fakeClock) {
	t.Helper()
	clk := &fakeClock{t: time.Unix(1_000_000, 0)}
	cfg := DefaultLeaseConfig()
	cfg.Now = clk.Now
	l, err := NewLeases(p, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l, clk
}

func TestLeaseReserveEnd(t *testing.T) {
	l, _ := newTable(t, host())
	a, err := l.Reserve("ja", "alice", 2, 2, 1<<30, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := l.Reserve("jb", "bob", 1, 2, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if a.Key == b.Key || len(a.Key) < 20 {
		t.Fatalf("keys %q %q", a.Key, b.Key)
	}
	if u := l.Usage(); u != (Usage{Jobs: 2, Cores: 4, Memory: 1 << 30}) {
		t.Fatalf("usage %+v", u)
	}
	got, err := l.End(a.Key)
	if err != nil || got.Job != "ja" {
		t.Fatalf("Release = %+v, %v", got, err)
	}
	if u := l.Usage(); u != (Usage{Jobs: 1, Cores: 2}) {
		t.Fatalf("usage after release %+v", u)
	}
	if _, err := l.End(a.Key); !errors.Is(err, ErrNoLease) {
		t.Fatalf("second release: %v", err)
	}
}

func TestLeaseExpiry(t *testing.T) {
	l, clk := newTable(t, host())
	ls, err := l.Reserve("ja", "alice", 4, 4, 0, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Reserve("jb", "bob", 1, 1, 0, 0); !errors.Is(err, ErrCapacity) {
		t.Fatalf("cores promised twice: %v", err)
	}
	clk.Add(10*time.Second - time.Nanosecond)
	if _, ok := l.Get(ls.Key); !ok {
		t.Fatal("lease gone before its time")
	}
	clk.Add(time.Nanosecond)
	gone := l.Expire()
	if len(gone) != 1 || gone[0].Key != ls.Key {
		t.Fatalf("Expire = %+v", gone)
	}
	if u := l.Usage(); u != (Usage{}) {
		t.Fatalf("slots not back: %+v", u)
	}
	if err := l.Commit(ls.Key, "ja"); !errors.Is(err, ErrNoLease) {
		t.Fatalf("commit of an expired lease: %v", err)
	}
	if _, err := l.Reserve("jb", "bob", 4, 4, 0, 0); err != nil {
		t.Fatalf("freed slots not reusable: %v", err)
	}
}

func TestLeaseCommit(t *testing.T) {
	l, clk := newTable(t, host())
	ls, err := l.Reserve("ja", "alice", 2, 2, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Commit(ls.Key, "jb"); !errors.Is(err, ErrWrongJob) {
		t.Fatalf("commit for another job: %v", err)
	}
	if err := l.Commit("nokey", "ja"); !errors.Is(err, ErrNoLease) {
		t.Fatalf("commit with a wrong key: %v", err)
	}
	if err := l.Commit(ls.Key, "ja"); err != nil {
		t.Fatal(err)
	}
	if err := l.Commit(ls.Key, "ja"); !errors.Is(err, ErrLeaseUsed) {
		t.Fatalf("second commit (a replay): %v", err)
	}
	clk.Add(DefaultLeaseConfig().MaxTTL * 10)
	got, ok := l.Get(ls.Key)
	if !ok || !got.Committed || !got.Expires.IsZero() {
		t.Fatalf("committed lease %+v, %v", got, ok)
	}
	if j, ok := l.ByJob("ja"); !ok || j.Key != ls.Key {
		t.Fatal("ByJob lost it")
	}
	if err := l.Shrink(ls.Key, 1, 1, 0); err != nil {
		t.Fatal(err)
	}
	if err := l.Shrink(ls.Key, 2, 2, 0); err == nil {
		t.Fatal("Shrink grew a lease")
	}
	if u := l.Usage(); u.Cores != 1 {
		t.Fatalf("usage after shrink %+v", u)
	}
}

func TestLeaseTTL(t *testing.T) {
	l, clk := newTable(t, host())
	cfg := DefaultLeaseConfig()
	a, _ := l.Reserve("ja", "alice", 1, 1, 0, 0)
	b, _ := l.Reserve("jb", "alice", 1, 1, 0, time.Hour*24)
	if !a.Expires.Equal(clk.Now().Add(cfg.DefaultTTL)) || !b.Expires.Equal(clk.Now().Add(cfg.MaxTTL)) {
		t.Fatalf("expiries %v %v", a.Expires, b.Expires)
	}
	if _, err := l.Reserve("jc", "alice", 1, 1, 0, -time.Second); err == nil {
		t.Fatal("negative ttl accepted")
	}
}

func TestLeaseRefusals(t *testing.T) {
	tests := []struct {
		name   string
		job    proto.JobID
		slots  int
		cores  int
		memory int64
		want   error
	}{
		{"J", "j3", 1, 1, 0, ErrCapacity},            // two leases already held, J=2
		{"held", "j1", 1, 1, 0, ErrJobLeased},        // j1 already has a lease
		{"bad id", "a/b", 1, 1, 0, nil},              // refused, not a capacity error
		{"no slot", "j9", 0, 1, 0, nil},              // refused
		{"cores < slots", "j9", 2, 1, 0, nil},        // refused
		{"negative mem", "j9", 1, 1, -1, nil},        // refused
		{"P", "j9", 5, 5, 0, ErrCapacity},            // P=4
		{"cores", "j9", 1, 3, 0, ErrCapacity},        // 2 of 4 cores free
		{"memory", "j9", 1, 1, 7 << 30, ErrCapacity}, // 6 GiB free
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, _ := newTable(t, host())
			if _, err := l.Reserve("j1", "alice", 1, 1, 1<<30, 0); err != nil {
				t.Fatal(err)
			}
			if _, err := l.Reserve("j2", "alice", 1, 1, 1<<30, 0); err != nil {
				t.Fatal(err)
			}
			if tt.name != "J" {
				p := host()
				p.MaxJobs = 3
				if err := l.SetPolicy(p); err != nil {
					t.Fatal(err)
				}
			}
			before := l.Usage()
			_, err := l.Reserve(tt.job, "bob", tt.slots, tt.cores, tt.memory, 0)
			if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) {
				t.Fatalf("Reserve = %v, want %v", err, tt.want)
			}
			if l.Usage() != before {
				t.Fatal("a refused reservation changed the usage")
			}
		})
	}
}

func TestAdmit(t *testing.T) {
	l, _ := newTable(t, host())
	d, ls, err := l.Admit("alice", proto.Need{Job: "ja", N: 3, R: 1}, 0)
	if err != nil || !d.Accept || ls.Slots != 3 || ls.Key == "" {
		t.Fatalf("Admit = %+v %+v %v", d, ls, err)
	}
	d, ls, err = l.Admit("bob", proto.Need{Job: "jb", N: 3, R: 1}, 0)
	if err != nil || !d.Accept || ls.Slots != 1 {
		t.Fatalf("second Admit = %+v %+v %v, want 1 slot (1 core left)", d, ls, err)
	}
	d, ls, err = l.Admit("carol", proto.Need{Job: "jc", N: 1, R: 1}, 0)
	if err != nil || d.Accept || ls.Key != "" || d.Reason == "" {
		t.Fatalf("third Admit = %+v %+v %v, want a refusal (J=2)", d, ls, err)
	}
	// The same job advertised again (a wider flood) gets no second lease.
	p := host()
	p.MaxJobs = 3
	p.Cores = 8
	if err := l.SetPolicy(p); err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.Admit("alice", proto.Need{Job: "ja", N: 3, R: 1}, 0); !errors.Is(err, ErrJobLeased) {
		t.Fatalf("re-advert: %v", err)
	}
	if err := l.SetPolicy(Policy{MaxJobs: -1}); err == nil || l.Policy().MaxJobs != 3 {
		t.Fatal("SetPolicy accepted a bad policy")
	}
}

func TestNewLeasesChecks(t *testing.T) {
	if _, err := NewLeases(Policy{MaxJobs: -1}, DefaultLeaseConfig()); err == nil {
		t.Error("bad policy accepted")
	}
	cfg := DefaultLeaseConfig()
	cfg.MaxTTL = cfg.DefaultTTL / 2
	if _, err := NewLeases(host(), cfg); err == nil {
		t.Error("MaxTTL < DefaultTTL accepted")
	}
}

// TestTwoJobsNeverShareSlots races two jobs admitting over the same
// machine, many times: the slots promised never exceed the cores lent.
func TestTwoJobsNeverShareSlots(t *testing.T) {
	p := host() // 4 cores, J=2, P=4
	for round := 0; round < 300; round++ {
		l, _ := newTable(t, p)
		var wg sync.WaitGroup
		start := make(chan struct{})
		slots := make([]int, 2)
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				n := proto.Need{Job: proto.JobID(fmt.Sprintf("job%d", i)), N: 3, R: 1}
				if d, ls, err := l.Admit(peer.ID(fmt.Sprint("sub", i)), n, 0); err == nil && d.Accept {
					slots[i] = ls.Slots
				}
			}()
		}
		close(start)
		wg.Wait()
		if slots[0]+slots[1] != p.Cores || slots[0] < 1 || slots[1] < 1 {
			t.Fatalf("round %d: offered %v slots on %d cores", round, slots, p.Cores)
		}
	}
}

// TestLeaseTableInvariants drives the table with seeded random operations
// from several goroutines and a moving clock, and checks after each step
// that what is held never exceeds the policy and that no lease outlives
// its expiry.
func TestLeaseTableInvariants(t *testing.T) {
	p := Policy{MaxJobs: 3, MaxProcs: 4, Cores: 6, Memory: 4 << 30}
	l, clk := newTable(t, p)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 99))
			for step := 0; step < 2000; step++ {
				randomOp(l, clk, rng, g, step)
				if err := checkTable(l, p, clk); err != nil {
					errs <- fmt.Errorf("goroutine %d step %d: %w", g, step, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func randomOp(l *Leases, clk *fakeClock, rng *rand.Rand, g, step int) {
	j := proto.JobID(fmt.Sprintf("g%dj%d", g, rng.IntN(5)))
	switch rng.IntN(6) {
	case 0, 1:
		n := proto.Need{Job: j, N: 1 + rng.IntN(6), R: 1, Req: proto.Requirements{MinMemory: int64(rng.IntN(3)) << 30}}
		_, _, _ = l.Admit("s", n, time.Duration(rng.IntN(20))*time.Second)
	case 2:
		if ls, ok := l.ByJob(j); ok {
			_ = l.Commit(ls.Key, j)
		}
	case 3:
		if ls, ok := l.ByJob(j); ok {
			_, _ = l.End(ls.Key)
		}
	case 4:
		clk.Add(time.Duration(rng.IntN(3000)) * time.Millisecond)
	case 5:
		_, _ = l.Reserve(j, "s", 1+rng.IntN(4), 1+rng.IntN(4), 0, 0)
	}
}

// checkTable reads the clock before List: the clock only moves forward, so
// List swept at a time at least now, and every uncommitted lease it returns
// must expire after now.
func checkTable(l *Leases, p Policy, clk *fakeClock) error {
	now := clk.Now()
	var u Usage
	for _, ls := range l.List() {
		u.Jobs++
		u.Cores += ls.Cores
		u.Memory += ls.Memory
		if ls.Slots > p.MaxProcs || ls.Cores < ls.Slots {
			return fmt.Errorf("lease %+v breaks P or cores >= slots", ls)
		}
		if !ls.Committed && !ls.Expires.After(now) {
			return fmt.Errorf("lease %+v outlived its expiry", ls)
		}
	}
	if u.Jobs > p.MaxJobs || u.Cores > p.Cores || u.Memory > p.Memory {
		return fmt.Errorf("held %+v exceeds policy %+v", u, p)
	}
	return nil
}

// The swap policy decides when the place of a job being swapped out by
// checkpoint is offered: at once under the overlapped policy (both in
// memory while it checkpoints), once its lease ends under the sequential
// one. The planner's usage counts it whatever the policy (it subtracts a
// leaving job itself, Holder.Leaving).
func TestLeavingLeaseUnderSwapPolicies(t *testing.T) {
	const M = int64(1) << 20
	for _, tt := range []struct {
		policy gang.Policy
		admit  bool
	}{
		{gang.Sequential, false},
		{gang.Overlapped, true},
	} {
		p := Policy{MaxJobs: 2, MaxProcs: 1, Cores: 2, Memory: 1024 * M, OS: "linux", Arch: "amd64", SwapPolicy: tt.policy}
		l, _ := newTable(t, p)
		a, err := l.Reserve("ja", "alice", 1, 1, 600*M, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Commit(a.Key, "ja"); err != nil {
			t.Fatal(err)
		}
		jb := proto.Need{Job: "jb", N: 1, R: 1, MemPerProc: 600 * M}
		if d, _, _ := l.Admit("bob", jb, 0); d.Accept {
			t.Fatalf("%v: admitted beside a job that holds the memory", tt.policy)
		}
		l.SetLeaving(a.Key, true)
		d, b, err := l.Admit("bob", jb, 0)
		if err != nil || d.Accept != tt.admit {
			t.Fatalf("%v: the leaving job's place: accept %v (%s, %v), want %v", tt.policy, d.Accept, d.Reason, err, tt.admit)
		}
		if u := l.Usage(); u.Memory < 600*M || u.Jobs < 1 {
			t.Errorf("%v: the planner's usage %+v leaves the leaving job out", tt.policy, u)
		}
		if tt.admit {
			if _, err := l.End(b.Key); err != nil {
				t.Fatal(err)
			}
		}
		l.SetLeaving(a.Key, false) // the swap refused: it runs on
		if d, _, _ := l.Admit("bob", jb, 0); d.Accept {
			t.Errorf("%v: admitted beside a job whose swap was refused", tt.policy)
		}
	}
}

// TestLeaseLivesAsLongAsTheSearch: an offer's lease lasts the job's
// scheduling deadline and the commit margin, so that an offer made at the
// first flood is still good at a commit at the deadline; the table's
// default without a deadline, and never more than its cap.
func TestLeaseLivesAsLongAsTheSearch(t *testing.T) {
	cases := []struct {
		deadline, want time.Duration
	}{
		{0, 2*time.Minute + 30*time.Second},
		{time.Minute, time.Minute + 30*time.Second},
		{4 * time.Minute, 4*time.Minute + 30*time.Second},
		{10 * time.Minute, 10*time.Minute + 30*time.Second},
		{time.Hour, 30 * time.Minute}, // DefaultLeaseConfig's MaxTTL
	}
	for _, c := range cases {
		l, clk := newTable(t, host())
		need := proto.Need{Job: "ja", N: 1, R: 1, Deadline: c.deadline}
		d, ls, err := l.Admit("alice", need, leaseTTL(need))
		if err != nil || !d.Accept {
			t.Fatalf("deadline %v: admit: %+v, %v", c.deadline, d, err)
		}
		if got := ls.Expires.Sub(clk.Now()); got != c.want {
			t.Errorf("deadline %v: the lease lives %v, want %v", c.deadline, got, c.want)
		}
	}
}
