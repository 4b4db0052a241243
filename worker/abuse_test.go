package worker

import (
	"errors"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/internal/ratelimit"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

func TestCheckJobSize(t *testing.T) {
	lim := AbuseLimits{MaxJobProcs: 8, MaxJobStage: 100}
	file := func(size int64) proto.FileRef { return proto.FileRef{Name: "f", Size: size} }
	for _, c := range []struct {
		name   string
		c      proto.Commit
		reason string // "" accepts
	}{
		{"at the caps", proto.Commit{N: 4, R: 2, Program: file(60), Inputs: []proto.FileRef{file(40)}}, ""},
		{"n×r over", proto.Commit{N: 3, R: 3, Program: file(1)}, RefusedJobTooLarge},
		{"n alone over", proto.Commit{N: 9, R: 1, Program: file(1)}, RefusedJobTooLarge},
		{"n×r overflowing int", proto.Commit{N: 1 << 62, R: 4, Program: file(1)}, RefusedJobTooLarge},
		{"program over", proto.Commit{N: 1, R: 1, Program: file(101)}, RefusedStageTooLarge},
		{"inputs add up over", proto.Commit{N: 1, R: 1, Program: file(50), Inputs: []proto.FileRef{file(30), file(30)}}, RefusedStageTooLarge},
		{"sizes adding up past int64", proto.Commit{N: 1, R: 1, Program: file(50), Inputs: []proto.FileRef{file(1<<63 - 1)}}, RefusedStageTooLarge},
		{"negative size", proto.Commit{N: 1, R: 1, Program: file(-1)}, RefusedLeaseRequest},
	} {
		err := checkJobSize(lim, c.c)
		switch {
		case c.reason == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.reason != "" && err == nil:
			t.Errorf("%s: accepted", c.name)
		case c.reason != "" && refusalOf(err) != c.reason:
			t.Errorf("%s: counted as %s, want %s (%v)", c.name, refusalOf(err), c.reason, err)
		}
	}
}

func testAbuse() *abuse {
	return newAbuse(AbuseLimits{MaxJobProcs: 8, MaxJobStage: 100,
		Offers: ratelimit.Limit{Rate: 1, Burst: 2}, Commits: ratelimit.Limit{Rate: 1, Burst: 1}})
}

func TestAllowOfferCountsEachRefusal(t *testing.T) {
	a := testAbuse()
	t0 := time.Unix(1000, 0)
	got := []bool{a.allowOffer("s", t0), a.allowOffer("s", t0),
		a.allowOffer("s", t0), a.allowOffer("other", t0), a.allowOffer("s", t0.Add(time.Second))}
	want := []bool{true, true, false, true, true}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("admits %v, want %v", got, want)
		}
	}
	if r := a.refused.Snapshot(); r[RefusedOfferRate] != 1 || len(r) != 1 {
		t.Fatalf("refusals %v, want one over the offer rate", r)
	}
}

func TestAdmitCommitCountsEachRefusal(t *testing.T) {
	a := testAbuse()
	t0 := time.Unix(1000, 0)
	ok := proto.Commit{N: 1, R: 1, Program: proto.FileRef{Name: "p", Size: 10}}
	if err := a.admitCommit("s", ok, t0); err != nil {
		t.Fatalf("first commit: %v", err)
	}
	err := a.admitCommit("s", ok, t0)
	if err == nil || !errors.Is(err, errCounted) {
		t.Fatalf("second commit at once: %v, want refused over the rate", err)
	}
	big := proto.Commit{N: 1, R: 1, Program: proto.FileRef{Name: "p", Size: 1000}}
	if err := a.admitCommit("s", big, t0.Add(time.Second)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("commit staging 1000 bytes: %v, want ErrTooLarge", err)
	}
	a.countLeaseError(err)
	a.countLeaseError(errors.New("no such lease"))
	r := a.refused.Snapshot()
	if r[RefusedCommitRate] != 1 || r[RefusedStageTooLarge] != 1 || r[RefusedLeaseRequest] != 1 || len(r) != 3 {
		t.Fatalf("refusals %v", r)
	}
}

func TestAbuseLimitsValidate(t *testing.T) {
	if err := DefaultAbuseLimits().validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for _, f := range []func(*AbuseLimits){
		func(a *AbuseLimits) { a.MaxJobProcs = 0 },
		func(a *AbuseLimits) { a.MaxJobProcs = proto.MaxProcs + 1 },
		func(a *AbuseLimits) { a.MaxJobStage = 0 },
		func(a *AbuseLimits) { a.Offers.Rate = 0 },
		func(a *AbuseLimits) { a.Commits.Burst = 0 },
	} {
		a := DefaultAbuseLimits()
		f(&a)
		if err := a.validate(); err == nil {
			t.Errorf("accepted %+v", a)
		}
	}
}
