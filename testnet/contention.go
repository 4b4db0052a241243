package testnet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/job/submitter"
	"github.com/zorilla-p2p/zorilla/node"
)

// ContentionConfig is the contention experiment: Agents loopback
// agents of one slot each (J = 1, P = 1), and Jobs jobs of N processes,
// each running `sleep Run`, submitted at once from different agents. With
// N > Agents/2 only one job fits at a time, so the jobs must run one after
// the other; how close that comes to the ideal serial schedule is what the
// experiment measures.
type ContentionConfig struct {
	Agents int
	Jobs   []int // K values, one round each, on the same net
	N      int
	Run    time.Duration
	// Submitter is every agent's submitter config (its flood schedule
	// decides how soon a waiting job finds slots that were freed).
	Submitter submitter.Config
	// Deadline is each job's scheduling deadline: long enough for K-1
	// jobs to run before it, so a job that misses it was starved or
	// deadlocked, not merely patient.
	Deadline time.Duration
	Seed     uint64
}

// DefaultContentionConfig is the measurement of BENCHMARKS.md: 8 agents, jobs of
// -n 5 running sleep 4, K = 2, 4 and 8, with a real agent's submitter.
func DefaultContentionConfig() ContentionConfig {
	sub := submitter.DefaultConfig()
	return ContentionConfig{Agents: 8, Jobs: []int{2, 4, 8}, N: 5, Run: 4 * time.Second,
		Submitter: sub, Deadline: 5 * time.Minute, Seed: 15}
}

func (c ContentionConfig) validate() error {
	switch {
	case c.Agents < 2 || c.N < 1 || c.N > c.Agents:
		return fmt.Errorf("testnet: contention: %d agents and n=%d: want 2 <= agents and 1 <= n <= agents", c.Agents, c.N)
	case len(c.Jobs) == 0 || slices.Min(c.Jobs) < 1:
		return fmt.Errorf("testnet: contention: job counts %v: want at least one, each >= 1", c.Jobs)
	case c.Run <= 0 || c.Deadline <= 0:
		return fmt.Errorf("testnet: contention: run %v and deadline %v must be positive", c.Run, c.Deadline)
	}
	return nil
}

// ContentionRound is one K: when each job was submitted, started (its
// last move to starting) and ended, against a lone job's time.
type ContentionRound struct {
	K     int
	Alone time.Duration // one job on the idle net, submit to end: the reference
	Jobs  []JobSpan     // in submission order
}

// JobSpan is one job of a round, times from the round's submission.
type JobSpan struct {
	ID         job.ID
	Agent      int // submitting agent
	Start, End time.Duration
	State      job.State
}

// Failed counts the jobs that did not end done.
func (r ContentionRound) Failed() int {
	n := 0
	for _, j := range r.Jobs {
		if j.State != job.Done {
			n++
		}
	}
	return n
}

// Makespan is the round's last end.
func (r ContentionRound) Makespan() time.Duration {
	var m time.Duration
	for _, j := range r.Jobs {
		m = max(m, j.End)
	}
	return m
}

// Ideal is the serial schedule: K lone jobs back to back.
func (r ContentionRound) Ideal() time.Duration { return time.Duration(r.K) * r.Alone }

// Utilization is the part of the makespan during which the slots were
// held by a job that used them: the union of every done job's
// [start, end] (staging, start and run) over the makespan.
func (r ContentionRound) Utilization() float64 {
	spans := r.ran()
	slices.SortFunc(spans, func(a, b JobSpan) int { return int(a.Start - b.Start) })
	var busy, reach time.Duration
	for _, s := range spans {
		from := max(s.Start, reach)
		if s.End > from {
			busy += s.End - from
		}
		reach = max(reach, s.End)
	}
	if m := r.Makespan(); m > 0 {
		return float64(busy) / float64(m)
	}
	return 0
}

// Gaps are, in order of start, the time between a job's start and the
// latest end of the jobs started before it: how long freed slots stood
// idle while a job waited. The first job has no gap.
func (r ContentionRound) Gaps() []time.Duration {
	spans := r.ran()
	slices.SortFunc(spans, func(a, b JobSpan) int { return int(a.Start - b.Start) })
	var out []time.Duration
	for i := 1; i < len(spans); i++ {
		var prev time.Duration
		for _, p := range spans[:i] {
			prev = max(prev, p.End)
		}
		// A job may enter starting just before the one before it is
		// recorded done (its hosts freed their slots first): no gap.
		out = append(out, max(0, spans[i].Start-prev))
	}
	return out
}

// ran returns the jobs that ended done, in submission order.
func (r ContentionRound) ran() []JobSpan {
	return slices.DeleteFunc(slices.Clone(r.Jobs), func(j JobSpan) bool { return j.State != job.Done })
}

// Inversions counts the pairs of jobs (of those that ran) started in the
// opposite order of their submission: 0 is first come, first served.
func (r ContentionRound) Inversions() int {
	n := 0
	jobs := r.ran()
	for i := range jobs {
		for j := i + 1; j < len(jobs); j++ {
			if jobs[j].Start < jobs[i].Start {
				n++
			}
		}
	}
	return n
}

// Contention starts the net, measures a lone job, then runs each K of
// cfg.Jobs. each, if set, gets every round as it ends.
func Contention(ctx context.Context, cfg ContentionConfig, each func(ContentionRound)) ([]ContentionRound, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	net, err := Loopback(ctx, cfg.Agents, Options{Seed: cfg.Seed, Configure: func(i int, c *node.Config) {
		c.Cores, c.MaxProcs, c.MaxJobs = 1, 1, 1
		c.Services.Submitter = cfg.Submitter
		// The jobs only sleep; they run as the agent's user so the
		// experiment needs no root and no user IDs.
		c.RunAs = node.RunAsNone
	}})
	if err != nil {
		return nil, err
	}
	defer net.Close()
	if err := net.Await(ctx, "every agent has neighbours", func() bool {
		for _, nd := range net.Nodes {
			if len(nd.Overlay().Neighbours()) < min(cfg.Agents-1, 2) {
				return false
			}
		}
		return true
	}); err != nil {
		return nil, err
	}
	progs, err := uploadSleep(net, cfg.Run)
	if err != nil {
		return nil, err
	}
	alone, err := runJobs(ctx, net, cfg, progs, 1)
	if err != nil {
		return nil, fmt.Errorf("testnet: contention: lone job: %w", err)
	}
	var out []ContentionRound
	for _, k := range cfg.Jobs {
		spans, err := runJobs(ctx, net, cfg, progs, k)
		r := ContentionRound{K: k, Alone: alone[0].End, Jobs: spans}
		if spans != nil {
			out = append(out, r)
			if each != nil {
				each(r)
			}
		}
		if err != nil {
			return out, fmt.Errorf("testnet: contention K=%d: %w", k, err)
		}
	}
	return out, nil
}

// uploadSleep puts the sleeping program in every agent's blob store.
func uploadSleep(net *Net, run time.Duration) ([]proto.FileRef, error) {
	dir, err := os.MkdirTemp("", "contention-")
	if err != nil {
		return nil, fmt.Errorf("testnet: contention program: %w", err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "sleep.sh")
	body := fmt.Sprintf("#!/bin/sh\nsleep %.3f\n", run.Seconds())
	if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
		return nil, fmt.Errorf("testnet: contention program: %w", err)
	}
	var refs []proto.FileRef
	for _, nd := range net.Nodes {
		h, size, err := nd.Blobs().PutFile(path)
		if err != nil {
			return nil, fmt.Errorf("testnet: contention program: %w", err)
		}
		refs = append(refs, proto.FileRef{Name: "sleep.sh", Hash: h.String(), Size: size})
	}
	return refs, nil
}

// runJobs submits k jobs at once, job i from agent i mod agents, waits
// for every one to end and for every lease to be given back, and returns
// their spans. A job that does not end done is an error.
func runJobs(ctx context.Context, net *Net, cfg ContentionConfig, progs []proto.FileRef, k int) ([]JobSpan, error) {
	t0 := time.Now()
	spans := make([]JobSpan, k)
	for i := range k {
		a := i % len(net.Nodes)
		d := job.NewDescription("sleep.sh", nil, cfg.N)
		d.Deadline = cfg.Deadline
		id, err := net.Nodes[a].Submitter().Submit(submitter.Submission{Desc: d, Program: progs[a]})
		if err != nil {
			return nil, fmt.Errorf("submit job %d: %w", i, err)
		}
		spans[i] = JobSpan{ID: id, Agent: a}
	}
	wctx, cancel := context.WithTimeout(ctx, cfg.Deadline+time.Duration(k)*(cfg.Run+time.Minute))
	defer cancel()
	errs := make(chan error, k)
	for i := range spans {
		go func() { errs <- awaitSpan(wctx, net, &spans[i], t0) }()
	}
	var all []error
	for range k {
		all = append(all, <-errs)
	}
	if err := errors.Join(all...); err != nil {
		return spans, err // the spans of the jobs that ended, failed or not
	}
	return spans, net.Await(wctx, "every lease given back", func() bool {
		for _, nd := range net.Nodes {
			if len(nd.Leases().List()) > 0 {
				return false
			}
		}
		return true
	})
}

// awaitSpan follows one job to its end and fills its span.
func awaitSpan(ctx context.Context, net *Net, s *JobSpan, t0 time.Time) error {
	var end *job.Record
	err := net.Nodes[s.Agent].Submitter().Watch(ctx, s.ID, 0, func(u job.Update) error {
		if u.Kind == "end" {
			end = u.Record
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("job %s: %w", s.ID, err)
	}
	if end == nil {
		return fmt.Errorf("job %s: no end", s.ID)
	}
	s.State = end.State
	for _, e := range end.History {
		if e.State == job.Starting {
			s.Start = e.At.Sub(t0)
		}
		s.End = e.At.Sub(t0)
	}
	if end.State != job.Done {
		return fmt.Errorf("job %s ended %s: %s", s.ID, end.State, end.Reason)
	}
	return nil
}

// WriteContentionTable prints one line per round: makespan against the
// ideal serial schedule, utilization, the idle gaps between jobs and the
// order of service.
func WriteContentionTable(w io.Writer, rounds []ContentionRound) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "K\tlone job\tideal\tmakespan\tx ideal\tutilization\tmean gap\tmax gap\tinversions\tfailed\t")
	for _, r := range rounds {
		gaps := r.Gaps()
		var sum, most time.Duration
		for _, g := range gaps {
			sum += g
			most = max(most, g)
		}
		mean := time.Duration(0)
		if len(gaps) > 0 {
			mean = sum / time.Duration(len(gaps))
		}
		fmt.Fprintf(tw, "%d\t%.1f s\t%.1f s\t%.1f s\t%.2f\t%.0f%%\t%.2f s\t%.2f s\t%d of %d\t%d\t\n",
			r.K, r.Alone.Seconds(), r.Ideal().Seconds(), r.Makespan().Seconds(),
			float64(r.Makespan())/float64(r.Ideal()), 100*r.Utilization(),
			mean.Seconds(), most.Seconds(), r.Inversions(), r.K*(r.K-1)/2, r.Failed())
	}
	return tw.Flush()
}
