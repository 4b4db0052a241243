package job

import (
	"context"
	"reflect"
	"testing"
	"time"

	mocknet "github.com/libp2p/go-libp2p/p2p/net/mock"

	"github.com/zorilla-p2p/zorilla/internal/blob"
	"github.com/zorilla-p2p/zorilla/internal/rpc"
)

// recordIn stores a record that went through the given states.
func recordIn(t *testing.T, s *Store, path ...State) Record {
	t.Helper()
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	r := NewRecord(NewID(), NewKey(), NewDescription("prog", nil, 2), t0)
	for i, st := range path {
		var err error
		if r, err = Transition(r, st, t0.Add(time.Duration(i+1)*time.Second), ""); err != nil {
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
	s, err := OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	open := []Record{
		recordIn(t, s),
		recordIn(t, s, Reserving),
		recordIn(t, s, Reserving, Starting),
		recordIn(t, s, Reserving, Starting, Running),
	}
	over := []Record{
		recordIn(t, s, Reserving, Starting, Running, Done),
		recordIn(t, s, Reserving, Cancelled),
		recordIn(t, s, Reserving, Failed),
	}
	now := time.Date(2025, 1, 2, 4, 0, 0, 0, time.UTC)
	if problems := failInterrupted(s, now); len(problems) > 0 {
		t.Fatal(problems)
	}
	for _, was := range open {
		got, err := s.Get(was.ID)
		if err != nil {
			t.Fatal(err)
		}
		last := got.History[len(got.History)-1]
		if got.State != Failed || got.Reason != ReasonRestarted || got.Exit == 0 ||
			last != (Event{State: Failed, At: now, Reason: ReasonRestarted}) || len(got.History) != len(was.History)+1 {
			t.Errorf("job left %s: got %s (%q, exit %d, last event %+v)", was.State, got.State, got.Reason, got.Exit, last)
		}
	}
	for _, was := range over {
		if got, _ := s.Get(was.ID); !reflect.DeepEqual(got, was) {
			t.Errorf("job that was %s changed: %+v", was.State, got)
		}
	}
	before, _ := s.List()
	if problems := failInterrupted(s, now.Add(time.Hour)); len(problems) > 0 {
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
	store, err := OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	was := recordIn(t, store, Reserving, Starting, Running)
	mn := mocknet.New()
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
	s, err := NewSubmitter(h, ep, DefaultSubmitterConfig(), nil, nil, blobs, store)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	var ups []Update
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Watch(ctx, was.ID, 0, func(u Update) error { ups = append(ups, u); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(ups) != 1 || ups[0].Kind != "end" || ups[0].State != Failed || ups[0].Record.Reason != ReasonRestarted {
		t.Fatalf("watch of the interrupted job gave %+v, want one end, failed (%s)", ups, ReasonRestarted)
	}
}
