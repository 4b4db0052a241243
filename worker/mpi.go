package worker

import (
	"errors"

	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/mpi/router"
)

// MPI is what the worker needs of the agent's MPI router: register a job's
// rank table before its processes start, and drop it when they end.
// RouterMPI gives it for a *router.Router; nil runs jobs without MPI.
type MPI interface {
	Socket() string
	AddJob(spec router.JobSpec) (MPIJob, error)
	RemoveJob(id string)
}

// MPIJob is what the worker does with one job's routes here: hear that
// every local copy is in Init and what befalls the job, let the copies
// go, fail it, take this host out of it, ask rank 0 for a checkpoint.
// *router.Job satisfies it.
type MPIJob interface {
	// InitReady is closed when every local copy waits in Init.
	InitReady() <-chan struct{}
	// Events reports aborts and lost hosts; closed when the job is removed.
	Events() <-chan router.Event
	// Err is why the job failed here (a *router.Failure), or nil.
	Err() error
	Release()
	Fail(err error)
	Leave(why string)
	CheckpointNow() bool
}

var _ MPIJob = (*router.Job)(nil)

// RouterMPI is the agent's MPI router as the worker uses it.
func RouterMPI(r *router.Router) MPI { return routerMPI{r: r} }

type routerMPI struct{ r *router.Router }

func (m routerMPI) Socket() string      { return m.r.Socket() }
func (m routerMPI) RemoveJob(id string) { m.r.RemoveJob(id) }

func (m routerMPI) AddJob(spec router.JobSpec) (MPIJob, error) {
	j, err := m.r.AddJob(spec)
	if err != nil {
		return nil, err // not a nil *router.Job in a non-nil MPIJob
	}
	return j, nil
}

func (r *running) mpiSpec() router.JobSpec {
	local := make([]router.Proc, len(r.c.Procs))
	for i, p := range r.c.Procs {
		local[i] = router.Proc{Rank: p.Rank, Replica: p.Replica}
	}
	return router.JobSpec{ID: r.routeID(), Key: r.c.Key, Size: r.c.N, Replicas: r.c.R, Table: r.c.RankTable, Local: local,
		OnSaved: r.saved}
}

// followMPI reports the end of phase one (every local copy in mpi.Init), a local
// rank's Abort and a host of the job that the router counted lost to the
// submitter.
func (r *running) followMPI(k *sink, m MPIJob) {
	ready, events := m.InitReady(), m.Events()
	for ready != nil || events != nil {
		select {
		case <-ready:
			ready = nil
			k.send(r.ctx, proto.Report{Kind: proto.RepReady})
		case e, ok := <-events:
			if !ok {
				events = nil // the router removed the job
				continue
			}
			if rep, ok := mpiReport(e); ok {
				k.send(r.ctx, rep)
			}
		case <-r.ctx.Done():
			return
		}
	}
}

// mpiReport is what the submitter hears of a router event: a local rank's
// abort (one relayed from another host is that host's to report), or a
// host of the job counted lost; false for the rest. Pure.
func mpiReport(e router.Event) (proto.Report, bool) {
	switch {
	case e.Kind == router.EventAbort && e.Peer == "":
		return proto.Report{Kind: proto.RepAbort, Rank: e.Rank, Code: e.Code}, true
	case e.Kind == router.EventPeerLost:
		return proto.Report{Kind: proto.RepPeerLost, Peer: e.Peer}, true
	}
	return proto.Report{}, false
}

// mpiJob is the job's MPI router state here, or nil before launch.
func (r *running) mpiJob() MPIJob {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mpi
}

// mpiFailure is why the job's MPI failed here, or nil.
func (r *running) mpiFailure() *router.Failure {
	var f *router.Failure
	if m := r.mpiJob(); m != nil && errors.As(m.Err(), &f) {
		return f
	}
	return nil
}

func (r *running) failMPI(err error) {
	if m := r.mpiJob(); m != nil {
		m.Fail(err)
	}
}
