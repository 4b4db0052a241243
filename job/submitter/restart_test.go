package submitter

import (
	"context"
	"reflect"
	"testing"
	"time"

	mocknet "github.com/libp2p/go-libp2p/p2p/net/mock"

	"github.com/zorilla-p2p/zorilla/internal/blob"
	"github.com/zorilla-p2p/zorilla/internal/peertest"
	"github.com/zorilla-p2p/zorilla/internal/rpc"
	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// recordIn stores a record that went through the given states.
func recordIn(t *testing.T, s *job.Store, path ...job.State) job.Record {
	t.Helper()
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	r := job.NewRecord(proto.NewJobID(), job.NewKey(), job.NewDescription("prog", nil, 2), t0)
	for i, st := range path {
		var err error
		if r, err = job.Transition(r, st, t0.Add(time.Duration(i+1)*time.Second), ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Put(r); err != nil {
		t.Fatal(err)
	}
	return r
}

// A job that was not over when its agent stopped is failed on restart,
// once; jobs that were over are left alone.
func TestFailInterrupted(t *testing.T) {
	s, err := job.OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	open := []job.Record{
		recordIn(t, s),
		recordIn(t, s, job.Reserving),
		recordIn(t, s, job.Reserving, job.Starting),
		recordIn(t, s, job.Reserving, job.Starting, job.Running),
	}
	over := []job.Record{
		recordIn(t, s, job.Reserving, job.Starting, job.Running, job.Done),
		recordIn(t, s, job.Reserving, job.Cancelled),
		recordIn(t, s, job.Reserving, job.Failed),
	}
	running := recordIn(t, s, job.Reserving, job.Starting, job.Running)
	plan, err := job.Place(job.Spread, []job.Offer{{Peer: peertest.Peers(t, 1)[0], Lease: "l1", Slots: 2}}, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	running.Plan, running.Program = &plan, &proto.FileRef{Name: "prog"}
	if err := s.Put(running); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2025, 1, 2, 4, 0, 0, 0, time.UTC)
	resume, problems := failInterrupted(s, now)
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	if len(resume) != 1 || resume[0].ID != running.ID {
		t.Fatalf("to re-attach: %v, want only the running job with a plan", resume)
	}
	if got, _ := s.Get(running.ID); !reflect.DeepEqual(got, running) {
		t.Errorf("the job to re-attach changed: %+v", got)
	}
	for _, was := range open {
		got, err := s.Get(was.ID)
		if err != nil {
			t.Fatal(err)
		}
		last := got.History[len(got.History)-1]
		if got.State != job.Failed || got.Reason != job.ReasonRestarted || got.Exit == 0 ||
			last != (job.StateChange{State: job.Failed, At: now, Reason: job.ReasonRestarted}) || len(got.History) != len(was.History)+1 {
			t.Errorf("job left %s: got %s (%q, exit %d, last event %+v)", was.State, got.State, got.Reason, got.Exit, last)
		}
	}
	for _, was := range over {
		if got, _ := s.Get(was.ID); !reflect.DeepEqual(got, was) {
			t.Errorf("job that was %s changed: %+v", was.State, got)
		}
	}
	before, _ := s.List()
	if _, problems := failInterrupted(s, now.Add(time.Hour)); len(problems) > 0 {
		t.Fatal(problems)
	}
	if after, _ := s.List(); !reflect.DeepEqual(before, after) {
		t.Fatal("a second restart changed the records")
	}
}

// NewSubmitter does it before serving: a watcher of the interrupted job
// gets its end at once, failed.
func TestNewSubmitterFailsInterruptedJobs(t *testing.T) {
	dir := t.TempDir()
	store, err := job.OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	was := recordIn(t, store, job.Reserving, job.Starting, job.Running)
	s := restartedSubmitter(t, mocknet.New(), store)
	var ups []job.Update
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Watch(ctx, was.ID, 0, func(u job.Update) error { ups = append(ups, u); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(ups) != 1 || ups[0].Kind != "end" || ups[0].State != job.Failed || ups[0].Record.Reason != job.ReasonRestarted {
		t.Fatalf("watch of the interrupted job gave %+v, want one end, failed (%s)", ups, job.ReasonRestarted)
	}
}

// A running job whose hosts no longer run it when its agent comes back
// (here: none can be reached) ends failed, naming the host; it is not
// started again.
func TestResumeWithoutHostsFails(t *testing.T) {
	store, err := job.OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mn := mocknet.New()
	gone, err := mn.GenPeer()
	if err != nil {
		t.Fatal(err)
	}
	was := recordIn(t, store, job.Reserving, job.Starting, job.Running)
	plan, err := job.Place(job.Spread, []job.Offer{{Peer: gone.ID(), Lease: "l1", Slots: 2}}, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	was.Plan, was.Program = &plan, &proto.FileRef{Name: "prog"}
	_ = gone.Close()
	if err := store.Put(was); err != nil {
		t.Fatal(err)
	}
	s := restartedSubmitter(t, mn, store)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	end, err := watchEnd(ctx, s, was.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := job.ReasonRestarted + ": host " + job.ShortPeer(gone.ID()) + " no longer runs the job"
	if end == nil || end.State != job.Failed || end.Reason != want || end.Restarts != 0 {
		t.Fatalf("end %+v, want failed: %s", end, want)
	}
}

// restartedSubmitter starts a submitter on a new peer of mn over store, as
// an agent starting again on its data dir does.
func restartedSubmitter(t *testing.T, mn mocknet.Mocknet, store *job.Store) *Submitter {
	t.Helper()
	t.Cleanup(func() { _ = mn.Close() })
	h, err := mn.GenPeer()
	if err != nil {
		t.Fatal(err)
	}
	ep := rpc.New(h)
	t.Cleanup(func() { _ = ep.Close() })
	blobs, err := blob.New(blob.DefaultConfig(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(h, ep, DefaultConfig(), nil, nil, blobs, store)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}
