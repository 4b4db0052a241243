package sim

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/zorilla-p2p/zorilla/job"
)

// stats are the run's counters.
type stats struct {
	messages, adverts, leases   uint64
	forged, crashes, graceKills uint64
	frozen                      uint64 // parts frozen at their fence (worker side)
	lostSubmitter               uint64
	reattached                  uint64
	busy                        time.Duration // process time run
}

// Result is what a run gives: its digest, counts, and the first
// violation, if any, with the command that replays it.
type Result struct {
	Config    Config
	Digest    string
	Events    uint64
	Violation *Violation
	Replay    string
	Sizes     []SizeStat
	// AllocP50 and AllocP99 are over every job that started.
	AllocP50, AllocP99 time.Duration
	// AdvertsPerJob are the advert messages sent for one job, on average.
	AdvertsPerJob float64
	Ended         map[string]int // jobs by how they ended ("done", "failed: ...", "waiting", ...)
	Adverts       float64        // advert messages per agent per job
	Messages      uint64
	Util          float64 // share of the cores' time spent running ranks
	QueuePeak     int
}

// SizeStat is the allocation time of the jobs of one size that started:
// from submission to running, in virtual time.
type SizeStat struct {
	N        int
	Started  int
	P50, P99 time.Duration
}

func (w *World) result() Result {
	r := Result{Config: w.cfg, Digest: w.Digest(), Events: w.events, Violation: w.failure, Ended: map[string]int{},
		Messages: w.stats.messages, QueuePeak: w.q.peak}
	if w.failure != nil {
		r.Replay = ReplayCommand(w.cfg)
	}
	alloc := map[int][]time.Duration{}
	var all []time.Duration
	for _, j := range w.jobs {
		if j.started > 0 {
			alloc[j.desc.Nodes] = append(alloc[j.desc.Nodes], j.started-j.submitted)
			all = append(all, j.started-j.submitted)
		}
		r.Ended[w.outcome(j)]++
	}
	for _, n := range w.cfg.Mix.Sizes {
		if _, done := alloc[n]; !done {
			alloc[n] = nil
		}
	}
	var sizes []int
	for n := range alloc {
		sizes = append(sizes, n)
	}
	slices.Sort(sizes)
	for _, n := range sizes {
		s := SizeStat{N: n, Started: len(alloc[n])}
		s.P50, s.P99 = percentiles(alloc[n])
		r.Sizes = append(r.Sizes, s)
	}
	r.AllocP50, r.AllocP99 = percentiles(all)
	if len(w.jobs) > 0 {
		r.AdvertsPerJob = float64(w.stats.adverts) / float64(len(w.jobs))
		r.Adverts = r.AdvertsPerJob / float64(len(w.agents))
	}
	cores := 0
	for _, a := range w.agents {
		cores += a.policy.Cores
	}
	r.Util = w.stats.busy.Seconds() / (float64(cores) * w.cfg.Duration.Seconds())
	return r
}

// percentiles are the median and the 99th percentile of ts (sorted in
// place); zero when ts is empty.
func percentiles(ts []time.Duration) (p50, p99 time.Duration) {
	if len(ts) == 0 {
		return 0, 0
	}
	slices.Sort(ts)
	return ts[(len(ts)-1)/2], ts[(len(ts)*99-1)/100]
}

// Count sums the jobs whose outcome starts with prefix ("done",
// "failed", "unfinished", "lost").
func (r Result) Count(prefix string) int {
	n := 0
	for k, v := range r.Ended {
		if strings.HasPrefix(k, prefix) {
			n += v
		}
	}
	return n
}

// outcome says how a job ended, or where it is.
func (w *World) outcome(j *simJob) string {
	switch {
	case j.detached:
		return "unfinished: submitter down"
	case j.gone:
		return "lost: submitter crashed"
	case j.m == nil:
		return "not submitted"
	case !j.m.Ended():
		return "unfinished: " + string(j.rec.State)
	case j.rec.State == job.Done:
		return "done"
	}
	return string(j.rec.State) + ": " + reasonKind(j.rec.Reason)
}

// reasonKind shortens a failure's reason to its kind.
func reasonKind(why string) string {
	for _, k := range []string{"agent restarted", "not enough", "exited", "lost", "no copy left", "could not start", "timed out", "not honoured", "refused"} {
		if strings.Contains(why, k) {
			return k
		}
	}
	if len(why) > 40 {
		why = why[:40]
	}
	return why
}

// ReplayCommand is the command that runs cfg again: every setting the
// command has a flag for (the tests' injected bugs have none).
func ReplayCommand(c Config) string {
	sizes := make([]string, len(c.Mix.Sizes))
	for i, n := range c.Mix.Sizes {
		sizes[i] = fmt.Sprint(n)
	}
	f, m := c.Faults, c.Mix
	cmd := fmt.Sprintf("go run ./testnet/cmd/sim --agents %d --jobs %d --seed %d --topology %s --regions %d --nat %v"+
		" --sizes %s --replicated %v --malleable %v --concentrate %v --failing %v --runtime %v --submit %v --duration %v"+
		" --rounds %d --crash %v --sub-crash %v --partitions %d --loss %v --spike %v --slow %v --skew %v --liars %v",
		c.Agents, c.Jobs, c.Seed, c.Topology, c.Regions, c.NATShare,
		strings.Join(sizes, ","), m.Replicated, m.Malleable, m.Concentrate, m.Failing, m.RunTime, c.Submit, c.Duration,
		c.Rounds, f.Crash, f.SubmitterCrash, f.Partitions, f.Loss, f.Spike, f.Slow, f.Skew, f.Liars)
	return cmd
}

// WriteTable writes a run's table.
func (r Result) WriteTable(out io.Writer) {
	fmt.Fprintf(out, "agents %d  jobs %d  seed %d  topology %s  faults %s\n", r.Config.Agents, r.Config.Jobs, r.Config.Seed,
		r.Config.Topology, strings.Join(append([]string{}, r.Config.Faults.Names()...), ","))
	fmt.Fprintf(out, "%6s %8s %10s %10s\n", "n", "started", "alloc p50", "alloc p99")
	for _, s := range r.Sizes {
		fmt.Fprintf(out, "%6d %8d %10s %10s\n", s.N, s.Started, secs(s.P50), secs(s.P99))
	}
	started := 0
	for _, s := range r.Sizes {
		started += s.Started
	}
	fmt.Fprintf(out, "%6s %8d %10s %10s\n", "all", started, secs(r.AllocP50), secs(r.AllocP99))
	fmt.Fprintf(out, "adverts per job %.0f  per agent per job %.4f  messages %d  utilization %.1f%%  events %d  queue peak %d\n",
		r.AdvertsPerJob, r.Adverts, r.Messages, 100*r.Util, r.Events, r.QueuePeak)
	var keys []string
	for k := range r.Ended {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(out, "  %-40s %d\n", k, r.Ended[k])
	}
	if r.Violation != nil {
		fmt.Fprintf(out, "VIOLATION %s\nseed %d: replay with\n  %s\n", r.Violation, r.Config.Seed, r.Replay)
	}
}

func secs(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }

// Outcomes lists each job's outcome, for debugging.
func (w *World) Outcomes() []string {
	var out []string
	for _, j := range w.jobs {
		out = append(out, fmt.Sprintf("%s %s ends=%d reason=%q", j.id, w.outcome(j), j.ends, j.rec.Reason))
	}
	return out
}
