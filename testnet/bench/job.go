package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/zorilla-p2p/zorilla/internal/pingpong"
	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/node"
)

// benchJobDeadline bounds the search for the two hosts: on two loopback
// agents the offers come in well under a second.
const benchJobDeadline = 30 * time.Second

// zorillaTarget runs the ping-pong program as a job of two ranks, one on
// each of the two agents, submitted through the first.
type zorillaTarget struct {
	cl        *node.Client
	prog      string
	timeout   time.Duration
	colocated bool // both ranks on one agent (bench pingpong --colocated)
}

func (z *zorillaTarget) name() string {
	if z.colocated {
		return "zorilla colocated"
	}
	return "zorilla"
}

// measure runs one job sweeping sizes up to the largest and returns rank
// 0's figures.
func (z *zorillaTarget) measure(ctx context.Context, sizes []int) (map[int]figure, error) {
	d := job.NewDescription(z.prog, []string{strconv.Itoa(sizes[len(sizes)-1])}, 2)
	d.Strategy, d.Timeout, d.Deadline = job.Spread, z.timeout, benchJobDeadline
	hosts := 2
	if z.colocated {
		d.Strategy, hosts = job.Concentrate, 1
	}
	if err := d.Validate(); err != nil {
		return nil, err
	}
	id, err := z.cl.SubmitFiles(ctx, d, false)
	if err != nil {
		return nil, err
	}
	rec, out, errs, err := follow(ctx, z.cl, id)
	if err != nil {
		return nil, err
	}
	if err := checkBenchJob(rec, hosts); err != nil {
		return nil, fmt.Errorf("%w; its output:\n%s%s", err, out, lastLines(errs, 20))
	}
	return rank0Figures(out)
}

// cancelWait bounds how long an interrupted bench waits for its job's
// end: workers kill a job's processes within seconds.
const cancelWait = 30 * time.Second

// follow watches job id to its end and returns its final record and its
// output, each line tagged with its rank ("[0] line"). When ctx ends
// first, the job is cancelled everywhere and followed to its end for at
// most cancelWait.
func follow(ctx context.Context, cl *node.Client, id job.ID) (rec job.Record, stdout, stderr string, err error) {
	watch, endWatch := context.WithCancel(context.Background())
	defer endWatch()
	stop := context.AfterFunc(ctx, func() {
		cctx, cancel := context.WithTimeout(context.Background(), cancelWait)
		defer cancel()
		_ = cl.Cancel(cctx, id) // the job may have just ended; the watch tells
		time.AfterFunc(cancelWait, endWatch)
	})
	defer stop()
	var out, errs strings.Builder
	var end *job.Record
	err = cl.Watch(watch, id, func(u job.Update) {
		switch {
		case u.Kind == "output" && u.Rank >= 0:
			w := &out
			if u.Stream != "stdout" {
				w = &errs
			}
			fmt.Fprintf(w, "[%s] %s\n", tag(u.Rank, u.Replica), u.Line)
		case u.Kind == "end" && u.Record != nil:
			r := *u.Record
			end = &r
		}
	})
	if end == nil {
		if err == nil {
			err = errors.New("the agent ended the stream early")
		}
		return job.Record{}, out.String(), errs.String(), fmt.Errorf("job %s: lost its updates: %w", id, err)
	}
	return *end, out.String(), errs.String(), nil
}

// tag is how a process is named in tagged output: its rank, and ".k" for
// copy k > 0 of a replicated rank.
func tag(rank, replica int) string {
	if replica == 0 {
		return strconv.Itoa(rank)
	}
	return fmt.Sprintf("%d.%d", rank, replica)
}

// checkBenchJob makes sure the job ended well with its two ranks on the
// number of agents wanted: otherwise it did not measure the path it says.
func checkBenchJob(rec job.Record, want int) error {
	if rec.State != job.Done {
		return fmt.Errorf("ping-pong job %s ended %s (exit %d)%s", rec.ID, rec.State, rec.Exit, withColon(rec.Reason))
	}
	if rec.Plan == nil || len(rec.Plan.Hosts) != want {
		hosts := 0
		if rec.Plan != nil {
			hosts = len(rec.Plan.Hosts)
		}
		return fmt.Errorf("ping-pong job %s ran on %d agents, want %d", rec.ID, hosts, want)
	}
	return nil
}

// rank0Figures reads the table rank 0 printed, from a job's tagged
// output ("[0] line"); other ranks' lines are ignored.
func rank0Figures(tagged string) (map[int]figure, error) {
	var table strings.Builder
	sc := bufio.NewScanner(strings.NewReader(tagged))
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), "[0] "); ok {
			table.WriteString(line + "\n")
		}
	}
	rows, err := pingpong.ParseTable(strings.NewReader(table.String()))
	if err != nil {
		return nil, fmt.Errorf("rank 0's output: %w", err)
	}
	figs := make(map[int]figure, len(rows))
	for _, r := range rows {
		figs[r.Size] = figure{latencyUS: r.LatencyUS, mbps: r.MBps}
	}
	return figs, nil
}

// lastLines is the end of a text, at most n lines.
func lastLines(s string, n int) string {
	lines := strings.SplitAfter(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "")
}

func withColon(s string) string {
	if s == "" {
		return ""
	}
	return ": " + s
}
