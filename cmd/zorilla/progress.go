package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/zorilla-p2p/zorilla/job"
)

// progress shows where the placement of a job stands while it floods: on
// a terminal one line rewritten in place, elsewhere a plain line each time
// the radius grows or the slots first suffice; then, once placed, which
// host runs which ranks. The printer calls it under its lock.
type progress struct {
	w     io.Writer
	tty   bool
	start time.Time
	plan  func() (*job.Plan, error) // the placement, asked when the job starts
	shown bool                      // a line is on the terminal, not ended
	last  job.FloodSample           // the last sample printed as a plain line
}

func newProgress(w io.Writer, plan func() (*job.Plan, error)) *progress {
	return &progress{w: w, tty: isTerminal(w), start: time.Now(), plan: plan}
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progressLine puts a sample in words.
func progressLine(s job.FloodSample, elapsed time.Duration) string {
	return fmt.Sprintf("placing: radius %d, %d offers, %d/%d slots, %v",
		s.Radius, s.Offers, s.Slots, s.Need, elapsed.Round(100*time.Millisecond))
}

// sample shows a new sample.
func (p *progress) sample(s job.FloodSample) {
	line := "zorilla: " + progressLine(s, time.Since(p.start))
	if p.tty {
		fmt.Fprint(p.w, "\r\x1b[K"+line)
		p.shown = true
		return
	}
	enough := s.Slots >= s.Need && p.last.Slots < p.last.Need
	if p.last.Need == 0 || s.Radius != p.last.Radius || enough {
		fmt.Fprintln(p.w, line)
		p.last = s
	}
}

// clear ends the line on the terminal before anything else is printed.
func (p *progress) clear() {
	if p.shown {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.shown = false
	}
}

// placed prints the placement once the job starts.
func (p *progress) placed() {
	plan, err := p.plan()
	if err != nil || plan == nil {
		return
	}
	fmt.Fprint(p.w, placementSummary(*plan))
}

// placementSummary lists the hosts of a plan with their RTT and ranks.
func placementSummary(plan job.Plan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "zorilla: placed %d x %d %s on %d hosts\n", plan.N, plan.R, plan.Strategy, len(plan.Hosts))
	for _, h := range plan.Hosts {
		tags := make([]string, len(h.Procs))
		for i, pr := range h.Procs {
			tags[i] = procTag(pr.Rank, pr.Replica)
		}
		fmt.Fprintf(&b, "zorilla:   %s  %8v  ranks %s\n", shortPeer(h.Offer.Peer), h.Offer.RTT.Round(10*time.Microsecond), strings.Join(tags, " "))
	}
	return b.String()
}

// planOf asks the agent for the job's placement.
func planOf(ctx context.Context, get func(context.Context, job.ID) (job.Record, error), id job.ID) func() (*job.Plan, error) {
	return func() (*job.Plan, error) {
		ctx, cancel := context.WithTimeout(ctx, apiTimeout)
		defer cancel()
		rec, err := get(ctx, id)
		return rec.Plan, err
	}
}

// showProgress lets the progress line take u: it reports whether u was a
// progress update, and clears the line before anything else is printed.
func (p *printer) showProgress(u job.Update) bool {
	if u.Kind == "progress" {
		if u.Flood != nil {
			p.progress.sample(*u.Flood)
		}
		return true
	}
	p.progress.clear()
	return false
}
