package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/mpi"
	"github.com/zorilla-p2p/zorilla/node"
)

// notifyInterrupt returns a context that ends on Ctrl-C (SIGINT) or SIGTERM;
// stop restores the default handling, so a second Ctrl-C ends the command.
func notifyInterrupt(parent context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
}

// cancelWait bounds how long an interrupted command waits for the job's
// end: workers kill a job's processes within seconds (proc's kill grace is
// 5 s), so a job still not over after this is stuck somewhere else.
const cancelWait = 30 * time.Second

// followJob prints a job's updates until it ends and returns its final
// record. When interrupted ends (Ctrl-C), the job is cancelled everywhere and
// followed to its end (for at most cancelWait); stop, unless nil, is called
// then, so that a second Ctrl-C ends the command at once.
func followJob(interrupted context.Context, stop func(), cl *node.Client, id job.ID, p *printer) (job.Record, error) {
	watch, endWatch := context.WithCancel(context.Background())
	defer endWatch()
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-interrupted.Done():
			if stop != nil {
				stop()
				p.notef("cancelling job %s (Ctrl-C again to stop waiting)", id)
			} else {
				p.notef("cancelling job %s", id)
			}
			ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
			defer cancel()
			if err := cl.Cancel(ctx, id); err != nil {
				p.notef("cancel: %v", err) // the job may have just ended; the watch tells
			}
			select {
			case <-watch.Done():
			case <-time.After(cancelWait):
				p.notef("job %s did not end within %v of the cancel; see zorilla status %s", id, cancelWait, id)
				endWatch()
			}
		case <-watch.Done():
		}
	})
	err := cl.Watch(watch, id, p.update)
	endWatch()
	wg.Wait()
	if rec, ok := p.end(); ok {
		return rec, nil
	}
	if err == nil {
		err = errors.New("the agent ended the stream early")
	}
	return job.Record{}, cli.Exit(fmt.Sprintf("job %s: lost its updates: %v (see zorilla status %s)", id, err, id), 1)
}

// follow prints job id's output, state changes and placement until it
// ends, as submit and resume do, and returns its final record; Ctrl-C
// (ctx) cancels the job.
func follow(ctx context.Context, stop func(), c *cli.Context, cl *node.Client, id job.ID) (job.Record, error) {
	pr := newPrinter(c.App.Writer, c.App.ErrWriter, id)
	pr.progress = newProgress(c.App.ErrWriter, planOf(c.Context, cl.Job, id))
	return followJob(ctx, stop, cl, id, pr)
}

// finish brings back the output files of a job that ended and turns its
// end into the command's exit.
func finish(c *cli.Context, cl *node.Client, rec job.Record, outDir string) error {
	if len(rec.Desc.Outputs) > 0 {
		if err := fetchOutputs(c.Context, cl, rec.ID, outDir, c.App.ErrWriter); err != nil {
			fmt.Fprintf(c.App.ErrWriter, "zorilla: %v (they stay in the agent's job folder; see zorilla status %s)\n", err, rec.ID)
		}
	}
	return jobExit(rec)
}

// printer writes a job's updates: output lines tagged by rank to stdout or
// stderr as the process wrote them, state changes as one line on stderr.
// Its methods may be called from two goroutines.
type printer struct {
	mu     sync.Mutex
	stdout io.Writer
	stderr io.Writer
	id     job.ID
	start  time.Time
	rec    *job.Record
	// failLines are the MPI failure lines already shown (as a rank printed
	// them, its tag aside): every rank of a failed job tends to print the
	// same one, which is said once; repeats counts the others.
	failLines map[string]bool
	repeats   int
	// progress, when set, shows the placement while the job floods.
	progress *progress
}

func newPrinter(stdout, stderr io.Writer, id job.ID) *printer {
	return &printer{stdout: stdout, stderr: stderr, id: id, start: time.Now()}
}

// update prints one update, or keeps the final record.
func (p *printer) update(u job.Update) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.progress != nil && p.showProgress(u) {
		return
	}
	switch u.Kind {
	case "output":
		w := p.stdout
		if u.Stream != "stdout" {
			w = p.stderr
		}
		if u.Rank < 0 { // a note from the agent, e.g. output skipped
			fmt.Fprintln(p.stderr, "zorilla:", joinNote(u.Line, u.Note))
			return
		}
		if p.repeatedFailure(u) {
			return
		}
		fmt.Fprintf(w, "[%s] %s\n", procTag(u.Rank, u.Replica), u.Line)
	case "state":
		fmt.Fprintf(p.stderr, "zorilla: job %s %s (+%v)%s\n", p.id, u.State,
			time.Since(p.start).Round(time.Millisecond), withColon(u.Note))
		if p.progress != nil && u.State == job.Starting {
			p.progress.placed()
		}
	case "end":
		if p.repeats > 0 {
			fmt.Fprintf(p.stderr, "zorilla: %d more ranks printed the same MPI failure (every line is in the job's stderr file)\n", p.repeats)
		}
		if u.Record != nil {
			rec := *u.Record
			p.rec = &rec
		}
	}
}

// maxFailLines bounds the distinct failure lines remembered.
const maxFailLines = 64

// repeatedFailure reports whether u is an MPI failure line that another
// rank already printed, and counts it.
func (p *printer) repeatedFailure(u job.Update) bool {
	at := strings.Index(u.Line, mpi.ErrJobFailed.Error())
	if u.Stream != "stderr" || at < 0 {
		return false
	}
	key := u.Line[at:] // what the program put before it may name the rank
	if p.failLines[key] {
		p.repeats++
		return true
	}
	if p.failLines == nil {
		p.failLines = map[string]bool{}
	}
	if len(p.failLines) < maxFailLines {
		p.failLines[key] = true
	}
	return false
}

// notef prints one line of the command's own on stderr.
func (p *printer) notef(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.stderr, "zorilla: "+format+"\n", args...)
}

// end returns the final record once the job's end was seen.
func (p *printer) end() (job.Record, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rec == nil {
		return job.Record{}, false
	}
	return *p.rec, true
}

func joinNote(line, note string) string {
	switch {
	case line == "":
		return note
	case note == "":
		return line
	}
	return line + " (" + note + ")"
}

func withColon(s string) string {
	if s == "" {
		return ""
	}
	return ": " + s
}

// writeDryRun prints the latency-sorted rlist of a dry run, with what the
// job's strategy would place on each host, and says whether the job is
// feasible. It returns an exit error when it is not (or the dry run did
// not end well).
func writeDryRun(w io.Writer, rec job.Record) error {
	d := rec.Desc
	plan, perr := d.PlaceOn(rec.Offers)
	writeOffers(w, rec.Offers, plan)
	if seen := job.SeenSummary(rec.Offers, rec.Declines); seen != "" {
		fmt.Fprintln(w, seen)
	}
	if perr != nil {
		fmt.Fprintf(w, "not feasible: n=%s r=%d: %v\n", d.FormatProcs(), d.Replicas, perr)
		return cli.Exit(fmt.Sprintf("job %s: dry run: not feasible", rec.ID), 1)
	}
	fmt.Fprintf(w, "feasible: n=%d r=%d %s on %d of %d hosts\n", plan.N, d.Replicas, d.Strategy, len(plan.Hosts), len(rec.Offers))
	if rec.State != job.Done {
		return jobExit(rec)
	}
	return nil
}

// heldMemory is the memory an offer holds for the job: what the job asks
// with mem=, so "-" when it asks none (the agent then holds none).
func heldMemory(n int64) string {
	if n <= 0 {
		return "-"
	}
	return proto.FormatSize(n)
}

// writeOffers prints an rlist in its order, with how many processes plan
// puts on each offer.
func writeOffers(w io.Writer, offers []job.Offer, plan job.Plan) {
	use := map[string]int{}
	for _, h := range plan.Hosts {
		use[h.Offer.Lease] = len(h.Procs)
	}
	fmt.Fprintf(w, "offers (rlist, closest first): %d\n", len(offers))
	if len(offers) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  #\tPEER\tSLOTS\tCORES\tMEMORY\tRTT\tPLACED")
	for i, o := range offers {
		fmt.Fprintf(tw, "  %d\t%s\t%d\t%d\t%s\t%v\t%d\n", i+1, o.Peer, o.Slots, o.Cores,
			heldMemory(o.Memory), o.RTT.Round(time.Microsecond), use[o.Lease])
	}
	tw.Flush()
}
