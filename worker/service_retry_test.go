package worker

import (
	"reflect"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/worker/proc"
)

// TestServiceRetry ends a run for a retry and keeps its slots for the next
// start under a new key, with the job's priority and need: asked with
// OpRetry, or with a kill and the Retry flag of older submitters.
func TestServiceRetry(t *testing.T) {
	for name, retry := range map[string]proto.LeaseRequest{
		"OpRetry":         {Op: proto.OpRetry, Reason: "retry"},
		"kill with Retry": {Op: proto.OpKill, Retry: true, Reason: "retry"},
	} {
		t.Run(name, func(t *testing.T) {
			n := newServiceNet(t, servicePolicy(), nil)
			need := proto.Need{Job: "job1", N: 1, R: 1, Priority: 3, Deadline: 5 * time.Minute}
			lease, p, m := n.start(t, need)
			r := n.running(t, need.Job, lease)
			before, _ := n.leases.Get(lease)
			retry.Job, retry.Lease = need.Job, lease
			rep := n.sub.call(t, n.worker.ID(), retry)
			if !rep.OK || rep.Lease == "" || rep.Lease == lease {
				t.Fatalf("retry: %+v, want a new lease key", rep)
			}
			if !p.killed.Load() {
				t.Fatal("the retry did not end the process")
			}
			n.gone(t, r, m)
			l, ok := n.leases.Get(rep.Lease)
			want := Lease{Key: rep.Lease, Job: need.Job, Submitter: n.sub.h.ID(), Slots: before.Slots, Cores: before.Cores,
				Memory: before.Memory, Expires: n.clock.Now().Add(need.Deadline + commitMargin), Priority: 3, Need: need}
			if !ok || !reflect.DeepEqual(l, want) {
				t.Fatalf("lease after the retry: %+v (held %v)\nwant %+v", l, ok, want)
			}
			n.startAgain(t, need.Job, rep.Lease)
		})
	}
}

// startAgain commits the job's second start on lease and ends it.
func (n *serviceNet) startAgain(t *testing.T, j proto.JobID, lease string) {
	t.Helper()
	if rep := n.sub.call(t, n.worker.ID(), n.commitOf(j, lease, 2)); !rep.OK {
		t.Fatalf("commit on the retry's lease: %s", rep.Error)
	}
	m := recv(t, n.mpi.added, "the second start's MPI routes")
	if want := string(j) + ".2"; m.spec.ID != want {
		t.Fatalf("second start routed as %q, want %q", m.spec.ID, want)
	}
	p := recv(t, n.runner.started, "the second start's process")
	n.expect(t, lease, proto.RepStarted)
	r := n.running(t, j, lease)
	p.end(proc.Exit{})
	n.expect(t, lease, proto.RepExit, proto.RepDone)
	n.gone(t, r, m)
}

// TestServiceRetryAnOffer keeps the slots of a lease nothing runs under
// (the start failed before this host's commit) under a new key.
func TestServiceRetryAnOffer(t *testing.T) {
	n := newServiceNet(t, servicePolicy(), nil)
	o := n.offer(t, proto.Need{Job: "job1", N: 2, R: 1})
	rep := n.sub.call(t, n.worker.ID(), proto.LeaseRequest{Op: proto.OpRetry, Job: "job1", Lease: o.Lease})
	if !rep.OK || rep.Lease == "" || rep.Lease == o.Lease {
		t.Fatalf("retry: %+v, want a new lease key", rep)
	}
	if _, ok := n.leases.Get(o.Lease); ok {
		t.Fatal("the old key still names a lease")
	}
	if l, ok := n.leases.Get(rep.Lease); !ok || l.Slots != o.Slots || l.Committed {
		t.Fatalf("lease after the retry: %+v (held %v), want %d slots offered", l, ok, o.Slots)
	}
}

// TestServiceRetryKeepsTheSlots holds a retried job's slots from the end
// of its run to its new lease: a job waiting in the line for them does
// not take them in between, and gets them once the retry gives them back.
func TestServiceRetryKeepsTheSlots(t *testing.T) {
	p := servicePolicy()
	p.MaxJobs = 1
	n := newServiceNet(t, p, nil)
	lease, _, m := n.start(t, proto.Need{Job: "job1", N: 1, R: 1})
	r := n.running(t, "job1", lease)
	n.advertise(proto.Need{Job: "job2", N: 1, R: 1})
	if d := recv(t, n.sub.declines, "a decline"); d.Job != "job2" || d.Code != proto.DeclineBusy {
		t.Fatalf("decline %+v, want busy", d)
	}
	rep := n.sub.call(t, n.worker.ID(), proto.LeaseRequest{Op: proto.OpRetry, Job: "job1", Lease: lease})
	if !rep.OK {
		t.Fatalf("retry: %s", rep.Error)
	}
	n.gone(t, r, m)
	select {
	case o := <-n.sub.offers:
		t.Fatalf("the line was offered %+v while the retry held the slots", o)
	default:
	}
	if rep := n.sub.call(t, n.worker.ID(), proto.LeaseRequest{Op: proto.OpCancel, Job: "job1", Lease: rep.Lease}); !rep.OK {
		t.Fatalf("cancel: %s", rep.Error)
	}
	if o := recv(t, n.sub.offers, "an offer to the line"); o.Job != "job2" {
		t.Fatalf("offered %+v, want job2", o)
	}
}
