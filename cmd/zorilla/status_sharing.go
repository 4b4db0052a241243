package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// writeSharing adds the time-sharing lines of a job's status: its
// priority, memory per process and swap slice when one is not the
// default, and its time running, frozen and swapped out once it ran,
// with how many times it was swapped out.
func writeSharing(tw *tabwriter.Writer, r job.Record, now time.Time) {
	if d := r.Desc; d.Priority != 0 || d.MemPerProc != 0 || d.SwapSlice != job.DefaultSwapSlice {
		slice := "never"
		if d.SwapSlice > 0 {
			slice = d.SwapSlice.String()
		}
		fmt.Fprintf(tw, "sharing\tpriority %d, memory per process %s, swap slice %s\n",
			d.Priority, proto.FormatSize(d.MemPerProc), slice)
	}
	if len(r.Switches) == 0 {
		return
	}
	t := r.TimeAt(now)
	sliced := ""
	if t.Sliced > 0 {
		sliced = fmt.Sprintf(" (%v of it by time slices)", t.Sliced.Round(time.Millisecond))
	}
	swaps := ""
	switch n := swapOuts(r.Switches); {
	case n == 1:
		swaps = ", once"
	case n > 1:
		swaps = fmt.Sprintf(", %d times", n)
	}
	fmt.Fprintf(tw, "time\trunning %v, frozen %v%s, swapped out %v%s\n",
		t.Running.Round(time.Millisecond), t.Frozen.Round(time.Millisecond), sliced, t.Swapped.Round(time.Millisecond), swaps)
}

// swapOuts counts the switches to swapped out among sw (the record's
// latest job.MaxSwitches).
func swapOuts(sw []job.Switch) int {
	n := 0
	for _, s := range sw {
		if s.To == job.PhaseSwapped {
			n++
		}
	}
	return n
}

// writeSwitches lists a job's changes of phase when it was ever frozen or
// swapped out (a job that only ran has one, its start).
func writeSwitches(w io.Writer, sw []job.Switch) {
	interesting := false
	for _, s := range sw {
		interesting = interesting || s.To == job.PhaseFrozen || s.To == job.PhaseSwapped
	}
	if !interesting {
		return
	}
	fmt.Fprintf(w, "switches: %d\n", len(sw))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, s := range sw {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", s.To, s.At.Local().Format(timeLayout), s.Why)
	}
	tw.Flush()
}
