package worker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/worker/pmi"
	"github.com/zorilla-p2p/zorilla/worker/proc"
)

// ErrPMINetwork refuses a PMI job spread over several hosts on an agent
// whose jobs see only loopback: MPICH's ranks connect to each other
// directly.
var ErrPMINetwork = errors.New("worker: this agent gives jobs a network with only loopback (--job-network isolated), and an MPICH job on several hosts needs its ranks to reach each other; its owner can allow it with --job-network host")

// pmiJob is what one rank's PMI connection reports to: the job's fence
// here (through the host's pmi.Stalls), and the submitter for an abort.
type pmiJob struct {
	pmi.KVS
	r *running
	k *sink
}

// pmiStallAfter is how long ranks of a host wait in a PMI barrier (after
// the first) before the job's output says so, once per barrier and host.
const pmiStallAfter = time.Minute

// stallNote is that line, on the rank's stderr; barrier counts from 0.
func stallNote(barrier int, waited time.Duration) string {
	return fmt.Sprintf("zorilla: ranks on this host have waited %v in the job's PMI barrier %d for its other ranks "+
		"(MPI_Init and MPI_Finalize enter such barriers); nothing is ended. If they wait in MPI_Finalize, the missing ranks "+
		"may be caught in MPICH 4.0.2's finalize hang over TCP between hosts (README): the job then ends at its --timeout or on zorilla cancel",
		waited, barrier+1)
}

// Abort reports the rank's MPI_Abort to the submitter, which ends the job
// everywhere (as for the Zorilla library's Abort).
func (j pmiJob) Abort(rank, code int, msg string) {
	log.Infow("rank called MPI_Abort", "job", j.r.id, "rank", rank, "code", code, "msg", msg)
	j.k.send(j.r.ctx, proto.Report{Kind: proto.RepAbort, Rank: rank, Code: code})
}

// launchPMI joins the job's fence and starts every local rank with a PMI
// socket (PMI_FD, PMI_RANK, PMI_SIZE) served by pmi.Serve. The first
// barrier ends phase one: Ready is reported when every local rank is in it,
// and it ends only after the submitter's release.
func (r *running) launchPMI(k *sink) ([]proc.Process, error) {
	s := r.svc
	self := -1
	for i, h := range r.c.Hosts {
		if h.Peer == s.h.ID() {
			self = i
		}
	}
	if self < 0 {
		return nil, errors.New("pmi: this agent is not among the job's hosts")
	}
	if len(r.c.Hosts) > 1 && r.sandbox.IsolatesNetwork() {
		return nil, ErrPMINetwork
	}
	ifaces, err := r.checkPMIReach(r.ctx)
	if err != nil {
		return nil, err
	}
	netEnv := pmiNetEnv(r.c.Env, netDevices(ifaces, loopbackName()))
	hostOf := make([]int, r.c.N)
	for rank, reps := range r.c.Ranks {
		hostOf[rank] = reps[0]
	}
	local := make([]int, len(r.c.Procs))
	for i, p := range r.c.Procs {
		local[i] = p.Rank
	}
	peers := make([]peer.ID, len(r.c.Hosts))
	for i, h := range r.c.Hosts {
		peers[i] = h.Peer
	}
	f, err := s.pmi.Join(pmi.FenceSpec{Job: r.routeID(), Key: r.c.Key, Hosts: peers, Self: self, Local: local})
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.fence = f
	r.mu.Unlock()
	go r.followPMI(k, f)
	stalls := &pmi.Stalls{KVS: f, After: pmiStallAfter, Note: func(barrier, rank int, waited time.Duration) {
		log.Infow("ranks wait long in a PMI barrier", "job", r.id, "barrier", barrier, "rank", rank, "waited", waited)
		k.send(r.ctx, proto.Report{Kind: proto.RepOutput, Rank: rank, Stream: proc.Stderr, Data: []byte(stallNote(barrier, waited))})
	}}
	info := pmi.Info{Size: r.c.N, KVSName: "kvs_" + r.routeID(), Mapping: pmi.ProcessMapping(hostOf)}
	var procs []proc.Process
	for _, p := range r.c.Procs {
		pr, err := r.startPMIRank(k, stalls, p, info, netEnv)
		if err != nil {
			killAll(procs)
			return nil, fmt.Errorf("start rank %d: %w", p.Rank, err)
		}
		procs = append(procs, pr)
	}
	return procs, nil
}

func (r *running) startPMIRank(k *sink, j pmi.KVS, p proto.Proc, info pmi.Info, netEnv []string) (proc.Process, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("pmi socket: %w", err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "pmi"), os.NewFile(uintptr(fds[1]), "pmi-rank")
	defer theirs.Close()
	env := append(append(r.env(""), netEnv...), r.c.Env...)
	env = append(env, "PMI_RANK="+strconv.Itoa(p.Rank), "PMI_SIZE="+strconv.Itoa(r.c.N),
		"PMI_SPAWNED=0", "MPI_LOCALNRANKS="+strconv.Itoa(len(r.c.Procs)))
	spec := proc.Spec{
		Job: r.routeID(), Rank: p.Rank, Replica: p.Replica, Size: r.c.N,
		Dir: r.rankDir(p), Program: filepath.Join(r.dir, r.c.Program.Name),
		Args: r.c.Args, Env: env, Timeout: r.c.Timeout, Limits: r.svc.cfg.Limits, Sandbox: r.sandbox,
		ExtraFile: theirs, ExtraFileEnv: "PMI_FD",
	}
	out := func(stream string, line []byte) {
		k.send(r.ctx, proto.Report{Kind: proto.RepOutput, Rank: p.Rank, Replica: p.Replica, Stream: stream, Data: append([]byte(nil), line...)})
	}
	pr, err := r.svc.runner.Start(r.ctx, spec, out)
	if err != nil {
		ours.Close()
		return nil, err
	}
	info.Rank = p.Rank
	go func() {
		sess, err := pmi.Serve(r.ctx, ours, info, pmiJob{KVS: j, r: r, k: k})
		if err != nil && r.ctx.Err() == nil {
			log.Infow("PMI connection ended with an error", "job", r.id, "rank", p.Rank, "err", err)
			k.send(r.ctx, proto.Report{Kind: proto.RepOutput, Rank: p.Rank, Replica: p.Replica, Stream: proc.Stderr,
				Data: []byte(fmt.Sprintf("zorilla: rank %d PMI: %v", p.Rank, err))})
		}
		log.Debugw("PMI connection closed", "job", r.id, "rank", p.Rank, "session", sess)
	}()
	return pr, nil
}

// followPMI reports the end of phase one: every local rank is in the
// first barrier.
func (r *running) followPMI(k *sink, f *pmi.Fence) {
	select {
	case <-f.Ready():
		k.send(r.ctx, proto.Report{Kind: proto.RepReady})
	case <-r.ctx.Done():
	}
}

// pmiFence is the job's fence here, or nil.
func (r *running) pmiFence() *pmi.Fence {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fence
}
