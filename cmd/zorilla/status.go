package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

func statusCommand() *cli.Command {
	return &cli.Command{
		Name:         "status",
		Usage:        "show a job: its state, the time of each state, its hosts and ranks, its exit",
		ArgsUsage:    "[JOB]   (a job ID or a unique prefix of one; without JOB, list the jobs)",
		Flags:        append(jobClientFlags(), watchFlag()),
		OnUsageError: onUsageError,
		Action:       statusAction,
	}
}

func statusAction(c *cli.Context) error {
	switch c.NArg() {
	case 0:
		if c.Bool("watch") {
			return usageErrorf("status --watch follows one JOB: give its ID")
		}
		return listJobs(c)
	case 1:
	default:
		return usageErrorf("status takes one JOB, got %d arguments", c.NArg())
	}
	if _, err := proto.ParseJobID(c.Args().First()); err != nil {
		return usageError(err)
	}
	cl, rec, err := clientForJob(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	if c.Bool("watch") {
		return watchStatus(c, cl, rec.ID)
	}
	writeStatus(c.App.Writer, rec, time.Now())
	return nil
}

// writeStatus prints one job: what it runs, its state and since when, every
// state change with its time, the hosts and the ranks each holds, and how
// it ended.
func writeStatus(w io.Writer, r job.Record, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	d := r.Desc
	fmt.Fprintf(tw, "job\t%s\n", r.ID)
	fmt.Fprintf(tw, "program\t%s\n", strings.Join(append([]string{d.Executable}, d.Args...), " "))
	if d.Malleable() {
		fmt.Fprintf(tw, "size\tn=%d of %s r=%d %s, resized at most every %v\n", r.WorldSize(), d.FormatProcs(), d.Replicas, d.Strategy, d.ResizeEvery)
	} else {
		fmt.Fprintf(tw, "size\tn=%d r=%d %s\n", d.Nodes, d.Replicas, d.Strategy)
	}
	state := fmt.Sprintf("%s since %s", r.State, r.Since().Local().Format(timeLayout))
	if !r.State.Terminal() {
		state += fmt.Sprintf(" (%v)", now.Sub(r.Since()).Round(time.Millisecond))
	}
	if r.DryRun {
		state += ", dry run"
	}
	fmt.Fprintf(tw, "state\t%s\n", state)
	if r.State.Terminal() {
		fmt.Fprintf(tw, "exit\t%s\n", exitText(r))
	}
	if r.Reason != "" {
		fmt.Fprintf(tw, "reason\t%s\n", r.Reason)
	}
	if seen := job.SeenSummary(r.Offers, r.Declines); seen != "" {
		fmt.Fprintf(tw, "advert\t%s\n", seen)
	}
	if r.Attempts > 1 || r.Matches > 1 {
		fmt.Fprintf(tw, "retries\t%d starts, %d matches\n", r.Attempts, r.Matches)
	}
	writeSharing(tw, r, now)
	tw.Flush()
	writeHistory(w, r.History)
	if r.Plan != nil {
		writePlan(w, *r.Plan)
	}
	writeLost(w, r.Lost)
	writeResizes(w, r.Resizes)
	writeRuns(w, r.Runs)
	writeCheckpoints(w, r)
	writeSwitches(w, r.Switches)
	if r.DryRun {
		plan, _ := d.PlaceOn(r.Offers)
		writeOffers(w, r.Offers, plan)
	}
}

// writeHistory lists every state change with its time and the time since
// the one before.
func writeHistory(w io.Writer, h []job.StateChange) {
	fmt.Fprintln(w, "history:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for i, e := range h {
		step := ""
		if i > 0 {
			step = "+" + e.At.Sub(h[i-1].At).Round(time.Millisecond).String()
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", e.State, e.At.Local().Format(timeLayout), step, e.Reason)
	}
	tw.Flush()
}

// writePlan lists the hosts of the current or last start with their RTT
// and ranks.
func writePlan(w io.Writer, p job.Plan) {
	fmt.Fprintf(w, "hosts: %d (%s)\n", len(p.Hosts), p.Strategy)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, h := range p.Hosts {
		fmt.Fprintf(tw, "  %s\trtt %v\tranks %s\n", h.Offer.Peer, h.Offer.RTT.Round(time.Microsecond), procList(h.Procs))
	}
	tw.Flush()
}

// writeLost lists the copies a replicated job lost, with when and why.
func writeLost(w io.Writer, lost []job.LostCopy) {
	if len(lost) == 0 {
		return
	}
	fmt.Fprintf(w, "lost copies: %d\n", len(lost))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, l := range lost {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", procTag(l.Rank, l.Replica), l.At.Local().Format(timeLayout), l.Host, l.Why)
	}
	tw.Flush()
}

// writeRuns lists the attempts of a job started more than once: when each
// began, its hosts and how it ended.
func writeRuns(w io.Writer, runs []job.Run) {
	if len(runs) < 2 {
		return
	}
	fmt.Fprintf(w, "attempts: %d\n", len(runs))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range runs {
		hosts := make([]string, len(r.Hosts))
		for i, h := range r.Hosts {
			hosts[i] = shortPeer(h)
		}
		end := r.End
		if end == "" {
			end = "running"
		}
		from := "from scratch"
		if r.From > 0 {
			from = fmt.Sprintf("from checkpoint %d", r.From)
		}
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\n", r.Attempt, r.Started.Local().Format(timeLayout), from, strings.Join(hosts, " "), end)
	}
	tw.Flush()
}

// procList writes processes as their tags in the output: "3" for the
// first copy of rank 3, "3.1" for its second copy.
func procList(ps []proto.Proc) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = procTag(p.Rank, p.Replica)
	}
	return strings.Join(s, " ")
}

// procTag is how a process is named in tagged output and status: its rank,
// and ".k" for copy k > 0 of a replicated rank.
func procTag(rank, replica int) string {
	if replica == 0 {
		return fmt.Sprint(rank)
	}
	return fmt.Sprintf("%d.%d", rank, replica)
}

// writeResizes lists a malleable job's changes of size.
func writeResizes(w io.Writer, rs []job.Resize) {
	if len(rs) == 0 {
		return
	}
	fmt.Fprintln(w, "resizes:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, z := range rs {
		fmt.Fprintf(tw, "  %s\t%d -> %d\t%s\n", z.At.Local().Format(timeLayout), z.From, z.To, z.Why)
	}
	tw.Flush()
}
