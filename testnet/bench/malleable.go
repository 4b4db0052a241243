package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/node"
	"github.com/zorilla-p2p/zorilla/testnet/localnet"
)

// The malleable workload: jobs of examples/heat with a cost per cell (a
// step takes less time on more ranks), submitted over time to agents of
// one slot each, run once with every job rigid at its largest size and
// once with the malleable ones free to start small, grow and give way.

// WorkloadJob is one job of the workload: submitted At after the first,
// from Min to Max ranks (Min = Max: rigid), Steps steps of heat.
type WorkloadJob struct {
	At       time.Duration
	Min, Max int
	Steps    int
}

// WorkloadConfig is the workload and its agents.
type WorkloadConfig struct {
	Agents int
	Cells  int // heat's line
	Work   int // heat's microseconds per cell per step: a step's cost, split over the ranks
	// Every is the jobs' --checkpoint-every, ResizeEvery their
	// --resize-every.
	Every, ResizeEvery time.Duration
	Jobs               []WorkloadJob
	Program            string // heat; built when empty
}

// DefaultWorkloadConfig is BENCHMARKS.md's workload: 8 one-slot agents and
// 6 jobs over a minute, long and short, malleable and rigid. A step of
// heat costs 0.4 s of a core (8000 cells at 50 µs), so the first job takes
// 30 s on 8 ranks and 2 minutes on 2.
func DefaultWorkloadConfig() WorkloadConfig {
	return WorkloadConfig{Agents: 8, Cells: 8000, Work: 50, Every: 5 * time.Second, ResizeEvery: 10 * time.Second,
		Jobs: []WorkloadJob{
			{At: 0, Min: 2, Max: 8, Steps: 600},
			{At: 10 * time.Second, Min: 2, Max: 2, Steps: 100},
			{At: 20 * time.Second, Min: 2, Max: 8, Steps: 400},
			{At: 30 * time.Second, Min: 2, Max: 4, Steps: 100},
			{At: 45 * time.Second, Min: 4, Max: 4, Steps: 150},
			{At: 60 * time.Second, Min: 2, Max: 8, Steps: 200},
		}}
}

// WorkloadSpan is one job of a run, times from the first submission.
type WorkloadSpan struct {
	Job          WorkloadJob
	ID           job.ID
	Start, End   time.Duration // its first start and its end
	RankSeconds  float64       // slots held by its runs, in seconds
	Resizes      int
	State        job.State
	Verified     bool // heat printed its checksum
	Sizes        string
	ErrorMessage string
}

// WorkloadRun is one run of the workload.
type WorkloadRun struct {
	Malleable bool
	Jobs      []WorkloadSpan
	Agents    int
}

// Makespan is the last end.
func (r WorkloadRun) Makespan() time.Duration {
	var m time.Duration
	for _, j := range r.Jobs {
		m = max(m, j.End)
	}
	return m
}

// MeanCompletion is the mean of each job's end less its submission.
func (r WorkloadRun) MeanCompletion() time.Duration {
	var sum time.Duration
	for _, j := range r.Jobs {
		sum += j.End - j.Job.At
	}
	return sum / time.Duration(max(len(r.Jobs), 1))
}

// LargestWait is the longest any job waited from submission to start.
func (r WorkloadRun) LargestWait() time.Duration {
	var m time.Duration
	for _, j := range r.Jobs {
		m = max(m, j.Start-j.Job.At)
	}
	return m
}

// Utilization is the slots' time held by runs over all slots' time to
// the makespan.
func (r WorkloadRun) Utilization() float64 {
	var held float64
	for _, j := range r.Jobs {
		held += j.RankSeconds
	}
	return held / (float64(r.Agents) * r.Makespan().Seconds())
}

// RunWorkload starts the agents of net and runs the workload twice: every
// job rigid at its largest size, then malleable.
func RunWorkload(ctx context.Context, cfg WorkloadConfig, net *localnet.Net, log io.Writer) ([]WorkloadRun, error) {
	prog, err := net.Program(ctx, cfg.Program, "heat")
	if err != nil {
		return nil, err
	}
	if err := net.Up(ctx, cfg.Agents, 1); err != nil {
		return nil, err
	}
	var runs []WorkloadRun
	for _, malleable := range []bool{false, true} {
		fmt.Fprintf(log, "zorilla bench malleable: the workload with %s jobs\n", map[bool]string{false: "rigid", true: "malleable"}[malleable])
		r, err := runWorkload(ctx, cfg, net, prog, malleable)
		runs = append(runs, r)
		if err != nil {
			return runs, err
		}
	}
	return runs, nil
}

// runWorkload submits the jobs at their times, each from the next agent,
// and follows them to their ends.
func runWorkload(ctx context.Context, cfg WorkloadConfig, net *localnet.Net, prog string, malleable bool) (WorkloadRun, error) {
	run := WorkloadRun{Malleable: malleable, Agents: cfg.Agents, Jobs: make([]WorkloadSpan, len(cfg.Jobs))}
	t0 := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, len(cfg.Jobs))
	for i, wj := range cfg.Jobs {
		select {
		case <-time.After(time.Until(t0.Add(wj.At))):
		case <-ctx.Done():
			return run, ctx.Err()
		}
		d := job.NewDescription(prog, []string{strconv.Itoa(wj.Steps), "0", strconv.Itoa(cfg.Cells), strconv.Itoa(cfg.Work)}, wj.Max)
		if malleable && wj.Min < wj.Max {
			d.MinNodes, d.ResizeEvery = wj.Min, cfg.ResizeEvery
		}
		d.Strategy, d.CheckpointEvery, d.Deadline = job.Spread, cfg.Every, 30*time.Minute
		cl := net.Agents()[i%len(net.Agents())].Client
		id, err := cl.SubmitFiles(ctx, d, false)
		if err != nil {
			return run, fmt.Errorf("submit job %d: %w", i, err)
		}
		run.Jobs[i] = WorkloadSpan{Job: wj, ID: id}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = followSpan(ctx, cl, &run.Jobs[i], t0)
		}()
	}
	wg.Wait()
	return run, errors.Join(errs...)
}

// followSpan follows one job to its end and fills its span.
func followSpan(ctx context.Context, cl *node.Client, s *WorkloadSpan, t0 time.Time) error {
	rec, out, errs, err := follow(ctx, cl, s.ID)
	if err != nil {
		return err
	}
	s.State, s.Resizes = rec.State, len(rec.Resizes)
	s.Verified = strings.Contains(out, "[0] heat OK ")
	for _, c := range rec.History {
		if c.State == job.Starting && s.Start == 0 {
			s.Start = c.At.Sub(t0)
		}
		s.End = c.At.Sub(t0)
	}
	var sizes []string
	for _, r := range rec.Runs {
		if !r.Ended.IsZero() {
			s.RankSeconds += float64(len(r.Hosts)) * r.Ended.Sub(r.Started).Seconds()
		}
		sizes = append(sizes, strconv.Itoa(len(r.Hosts)))
	}
	s.Sizes = strings.Join(sizes, ">")
	if rec.State != job.Done || !s.Verified {
		s.ErrorMessage = fmt.Sprintf("job %s ended %s%s; its output:\n%s%s", s.ID, rec.State, withColon(rec.Reason), out, lastLines(errs, 20))
		return errors.New(s.ErrorMessage)
	}
	return nil
}

// WriteWorkloadTable prints, per job and run, when it started and ended
// and its sizes, then each run's makespan, mean completion time,
// utilization and largest wait, and the malleable run's gain.
func WriteWorkloadTable(w io.Writer, runs []WorkloadRun) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\tjob\tsubmitted\tranks\tsteps\tstarted\tended\tsizes\tresizes\tverified\t")
	for _, r := range runs {
		for i, j := range r.Jobs {
			ranks := strconv.Itoa(j.Job.Max)
			if r.Malleable && j.Job.Min < j.Job.Max {
				ranks = fmt.Sprintf("%d:%d", j.Job.Min, j.Job.Max)
			}
			fmt.Fprintf(tw, "%s\t%d\t%.0f s\t%s\t%d\t%.1f s\t%.1f s\t%s\t%d\t%v\t\n", runName(r), i+1, j.Job.At.Seconds(), ranks,
				j.Job.Steps, j.Start.Seconds(), j.End.Seconds(), j.Sizes, j.Resizes, j.Verified)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\tmakespan\tmean completion\tutilization\tlargest wait\t")
	for _, r := range runs {
		fmt.Fprintf(tw, "%s\t%.1f s\t%.1f s\t%.0f%%\t%.1f s\t\n", runName(r), r.Makespan().Seconds(),
			r.MeanCompletion().Seconds(), 100*r.Utilization(), r.LargestWait().Seconds())
	}
	if len(runs) == 2 && runs[0].Makespan() > 0 && runs[0].MeanCompletion() > 0 {
		fmt.Fprintf(tw, "malleable / rigid\t%.2f\t%.2f\t\t\t\n", runs[1].Makespan().Seconds()/runs[0].Makespan().Seconds(),
			runs[1].MeanCompletion().Seconds()/runs[0].MeanCompletion().Seconds())
	}
	return tw.Flush()
}

func runName(r WorkloadRun) string {
	if r.Malleable {
		return "malleable"
	}
	return "rigid"
}
