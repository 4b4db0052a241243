package main

import (
	"bufio"
	"bytes"
	"context"
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
	id, err := submitJob(ctx, z.cl, d, false)
	if err != nil {
		return nil, err
	}
	var out, errs bytes.Buffer // the printer locks its writes; read once it is done
	rec, err := followJob(ctx, nil, z.cl, id, newPrinter(&out, &errs, id))
	if err != nil {
		return nil, err
	}
	if err := checkBenchJob(rec, hosts); err != nil {
		return nil, fmt.Errorf("%w; its output:\n%s%s", err, out.String(), lastLines(errs.String(), 20))
	}
	return rank0Figures(out.String())
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
