package worker

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zorilla-p2p/zorilla/internal/wire"
	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/worker/proc"
)

// servicePolicy is host() with priorities up to 5 honoured.
func servicePolicy() Policy {
	p := host()
	p.MaxPriority = 5
	return p
}

// running is the job running here under lease, or fails the test.
func (n *serviceNet) running(t *testing.T, j proto.JobID, lease string) *running {
	t.Helper()
	r := n.svc.lookup(j, lease)
	if r == nil {
		t.Fatalf("job %s does not run under lease %.6s", j, lease)
	}
	return r
}

// gone checks that the run r ended and left nothing: its lease, its folder,
// its MPI routes.
func (n *serviceNet) gone(t *testing.T, r *running, m *fakeMPIJob) {
	t.Helper()
	closed(t, r.done, "the end of the run")
	closed(t, m.removed, "the removal of the job's MPI routes")
	if _, ok := n.leases.Get(r.lease); ok {
		t.Errorf("lease %.6s still held after the run", r.lease)
	}
	if _, err := os.Stat(r.dir); !os.IsNotExist(err) {
		t.Errorf("job folder %s: %v, want it removed", r.dir, err)
	}
}

func TestNewServiceRefusesABadConfig(t *testing.T) {
	leases, _ := newTable(t, host())
	for name, f := range map[string]func(*ServiceConfig){
		"no jobs dir":       func(c *ServiceConfig) { c.JobsDir = "" },
		"no heartbeat":      func(c *ServiceConfig) { c.Heartbeat = 0 },
		"no offers":         func(c *ServiceConfig) { c.MaxOffersInFlight = 0 },
		"an empty line":     func(c *ServiceConfig) { c.Wait.Max = 0 },
		"no job size limit": func(c *ServiceConfig) { c.Abuse.MaxJobProcs = 0 },
	} {
		cfg := DefaultServiceConfig()
		cfg.JobsDir = filepath.Join(t.TempDir(), "jobs")
		f(&cfg)
		if s, err := NewService(nil, nil, cfg, leases, newFakeRunner(), nil, nil); err == nil {
			_ = s.Close()
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestServiceRunsAJob follows a job through the lease protocol: offer,
// commit, started, output, ready, release, exit, done; then nothing of it
// is left here.
func TestServiceRunsAJob(t *testing.T) {
	n := newServiceNet(t, servicePolicy(), nil)
	need := proto.Need{Job: "job1", N: 1, R: 1}
	lease, p, m := n.start(t, need)
	r := n.running(t, need.Job, lease)
	if l, ok := n.leases.Get(lease); !ok || !l.Committed {
		t.Fatalf("lease after the commit: %+v (held %v), want committed", l, ok)
	}
	if m.spec.ID != "job1" || len(m.spec.Local) != 1 || m.spec.Key != "key-job1" {
		t.Fatalf("MPI routes %+v", m.spec)
	}
	p.out(proc.Stdout, []byte("hello"))
	if out := n.expect(t, lease, proto.RepOutput)[0]; string(out.Data) != "hello" || out.Stream != proc.Stdout {
		t.Fatalf("output %+v", out)
	}
	close(m.ready)
	n.expect(t, lease, proto.RepReady)
	if rep := n.sub.call(t, n.worker.ID(), proto.LeaseRequest{Op: proto.OpRelease, Job: need.Job, Lease: lease}); !rep.OK {
		t.Fatalf("release: %s", rep.Error)
	}
	closed(t, m.released, "the MPI release")
	p.end(proc.Exit{})
	if exit := n.expect(t, lease, proto.RepExit, proto.RepDone)[0]; exit.Code != 0 || exit.Signal != "" {
		t.Fatalf("exit %+v", exit)
	}
	n.gone(t, r, m)
	if m.failure() != nil {
		t.Errorf("a job that exited 0 failed its MPI: %v", m.failure())
	}
}

// TestServiceCancel gives an offer back; a job that runs cannot be
// cancelled, only killed.
func TestServiceCancel(t *testing.T) {
	n := newServiceNet(t, servicePolicy(), nil)
	o := n.offer(t, proto.Need{Job: "job1", N: 1, R: 1})
	cancel := proto.LeaseRequest{Op: proto.OpCancel, Job: "job1", Lease: o.Lease}
	if rep := n.sub.call(t, n.worker.ID(), cancel); !rep.OK {
		t.Fatalf("cancel: %s", rep.Error)
	}
	if _, ok := n.leases.Get(o.Lease); ok {
		t.Fatal("lease still held after the cancel")
	}
	if rep := n.sub.call(t, n.worker.ID(), cancel); rep.OK || !strings.Contains(rep.Error, "no such lease") {
		t.Fatalf("second cancel: %+v, want no such lease", rep)
	}

	lease, p, m := n.start(t, proto.Need{Job: "job2", N: 1, R: 1})
	rep := n.sub.call(t, n.worker.ID(), proto.LeaseRequest{Op: proto.OpCancel, Job: "job2", Lease: lease})
	if rep.OK || !strings.Contains(rep.Error, "already committed") {
		t.Fatalf("cancel of a running job: %+v", rep)
	}
	if p.killed.Load() {
		t.Fatal("a refused cancel killed the job")
	}
	r := n.running(t, "job2", lease)
	p.end(proc.Exit{Code: 3})
	if exit := n.expect(t, lease, proto.RepExit, proto.RepDone)[0]; exit.Code != 3 {
		t.Fatalf("exit %+v, want status 3", exit)
	}
	n.gone(t, r, m)
	if f := m.failure(); f == nil || !strings.Contains(f.Reason, "exited with 3") {
		t.Fatalf("MPI failure %v, want the rank's status", f)
	}
}

// TestServiceKill ends a running job's processes and folder; a kill of a lease that
// nothing runs under ends the lease.
func TestServiceKill(t *testing.T) {
	n := newServiceNet(t, servicePolicy(), nil)
	lease, p, m := n.start(t, proto.Need{Job: "job1", N: 1, R: 1})
	r := n.running(t, "job1", lease)
	if rep := n.sub.call(t, n.worker.ID(), proto.LeaseRequest{Op: proto.OpKill, Job: "job1", Lease: lease, Reason: "test"}); !rep.OK {
		t.Fatalf("kill: %s", rep.Error)
	}
	// The kill ends the report stream with the run: what its end says is
	// for the submitter that killed it to ignore.
	n.gone(t, r, m)
	if !p.killed.Load() {
		t.Fatal("process not killed")
	}

	o := n.offer(t, proto.Need{Job: "job2", N: 1, R: 1})
	if rep := n.sub.call(t, n.worker.ID(), proto.LeaseRequest{Op: proto.OpKill, Job: "job2", Lease: o.Lease}); !rep.OK {
		t.Fatalf("kill of an offer: %s", rep.Error)
	}
	if _, ok := n.leases.Get(o.Lease); ok {
		t.Fatal("the killed offer's lease is still held")
	}
}

// TestServiceBadLeaseRequest resets a stream that does not hold a lease
// request, and counts it.
func TestServiceBadLeaseRequest(t *testing.T) {
	n := newServiceNet(t, servicePolicy(), nil)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	st, err := n.sub.ep.Open(ctx, n.worker.ID(), proto.LeaseProtocol)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Write([]byte("\x05nope!")); err != nil {
		t.Fatal(err)
	}
	var reply proto.LeaseReply
	if err := wire.ReadJSON(bufio.NewReader(st), proto.MaxReplySize, &reply); err == nil {
		t.Fatalf("answered %+v", reply)
	}
	if got := n.svc.Refusals()[RefusedBadLease]; got != 1 {
		t.Fatalf("%d bad lease requests counted, want 1", got)
	}
}

// TestServiceDeclines tells the submitter why no offer comes: its earlier
// run still ends here, or the agent is draining. A drain tells the
// submitter and the job's other hosts before it ends the processes.
func TestServiceDeclines(t *testing.T) {
	n := newServiceNet(t, servicePolicy(), nil)
	lease, _, m := n.start(t, proto.Need{Job: "job1", N: 1, R: 1})
	r := n.running(t, "job1", lease)
	n.advertise(proto.Need{Job: "job1", N: 1, R: 1})
	if d := recv(t, n.sub.declines, "a decline"); d.Job != "job1" || d.Code != proto.DeclineBusy {
		t.Fatalf("decline %+v, want busy", d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- n.svc.Drain(ctx, "test") }()
	n.expect(t, lease, proto.RepLeaving)
	if err := recv(t, done, "the end of the drain"); err != nil {
		t.Fatal(err)
	}
	n.gone(t, r, m)
	if m.left != "test" {
		t.Errorf("the job's other hosts were told %q, want the drain's reason", m.left)
	}
	n.advertise(proto.Need{Job: "job2", N: 1, R: 1})
	if d := recv(t, n.sub.declines, "a decline"); d.Job != "job2" || d.Code != proto.DeclineDraining {
		t.Fatalf("decline %+v, want draining", d)
	}
	if got := n.svc.Refusals()[RefusedDraining]; got != 1 {
		t.Fatalf("%d adverts refused while draining, want 1", got)
	}
}

// TestServiceRefusesCommits refuses a commit on a lease that expired, on
// another's lease, for another job, twice on one lease, or while the
// agent drains; none starts anything.
func TestServiceRefusesCommits(t *testing.T) {
	for _, c := range []struct {
		name, want string
		do         func(n *serviceNet, t *testing.T, req proto.LeaseRequest) proto.LeaseReply
	}{
		{"expired", "no such lease", func(n *serviceNet, t *testing.T, req proto.LeaseRequest) proto.LeaseReply {
			n.clock.Add(DefaultLeaseConfig().DefaultTTL)
			return n.sub.call(t, n.worker.ID(), req)
		}},
		{"not yours", "no such lease", func(n *serviceNet, t *testing.T, req proto.LeaseRequest) proto.LeaseReply {
			return callLease(t, n.stranger, n.worker.ID(), req)
		}},
		{"another job", "no such lease", func(n *serviceNet, t *testing.T, req proto.LeaseRequest) proto.LeaseReply {
			req.Job = "job2"
			return n.sub.call(t, n.worker.ID(), req)
		}},
		{"draining", "draining", func(n *serviceNet, t *testing.T, req proto.LeaseRequest) proto.LeaseReply {
			if err := n.svc.Drain(context.Background(), "test"); err != nil {
				t.Fatal(err)
			}
			return n.sub.call(t, n.worker.ID(), req)
		}},
		{"no body", "without a body", func(n *serviceNet, t *testing.T, req proto.LeaseRequest) proto.LeaseReply {
			req.Commit = nil
			return n.sub.call(t, n.worker.ID(), req)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := newServiceNet(t, servicePolicy(), nil)
			o := n.offer(t, proto.Need{Job: "job1", N: 1, R: 1})
			rep := c.do(n, t, n.commitOf("job1", o.Lease, 1))
			if rep.OK || !strings.Contains(rep.Error, c.want) {
				t.Fatalf("commit: %+v, want refused: %s", rep, c.want)
			}
			if n.svc.lookup("job1", o.Lease) != nil || len(n.runner.started) > 0 {
				t.Fatal("a refused commit started the job")
			}
			if got := n.svc.Refusals()[RefusedLeaseRequest]; got != 1 {
				t.Fatalf("%d lease requests refused, want 1", got)
			}
		})
	}
}

// TestServiceTakesACommitOnce refuses a commit replayed on a lease used.
func TestServiceTakesACommitOnce(t *testing.T) {
	n := newServiceNet(t, servicePolicy(), nil)
	lease, p, m := n.start(t, proto.Need{Job: "job1", N: 1, R: 1})
	r := n.running(t, "job1", lease)
	rep := n.sub.call(t, n.worker.ID(), n.commitOf("job1", lease, 1))
	if rep.OK || !strings.Contains(rep.Error, "already committed") {
		t.Fatalf("second commit: %+v, want refused", rep)
	}
	if n.running(t, "job1", lease) != r || p.killed.Load() {
		t.Fatal("a refused commit changed the run")
	}
	p.end(proc.Exit{})
	n.expect(t, lease, proto.RepExit, proto.RepDone)
	n.gone(t, r, m)
}

// TestServiceResumeAndCheckpoint answers a restarted submitter's resume
// for a job that runs here and passes a checkpoint request to rank 0
// here; both are refused once the job ended.
func TestServiceResumeAndCheckpoint(t *testing.T) {
	n := newServiceNet(t, servicePolicy(), nil)
	lease, p, m := n.start(t, proto.Need{Job: "job1", N: 1, R: 1})
	r := n.running(t, "job1", lease)
	resume := proto.LeaseRequest{Op: proto.OpResume, Job: "job1", Lease: lease}
	if rep := n.sub.call(t, n.worker.ID(), resume); !rep.OK {
		t.Fatalf("resume: %s", rep.Error)
	}
	ckpt := proto.LeaseRequest{Op: proto.OpCheckpoint, Job: "job1", Lease: lease}
	if rep := n.sub.call(t, n.worker.ID(), ckpt); !rep.OK || m.checkpoints.Load() != 1 {
		t.Fatalf("checkpoint: %+v, %d asked of rank 0", rep, m.checkpoints.Load())
	}
	p.end(proc.Exit{})
	n.expect(t, lease, proto.RepExit, proto.RepDone)
	n.gone(t, r, m)
	for _, req := range []proto.LeaseRequest{resume, ckpt} {
		if rep := n.sub.call(t, n.worker.ID(), req); rep.OK || !strings.Contains(rep.Error, "no such lease") {
			t.Errorf("%s after the end: %+v", req.Op, rep)
		}
	}
}
