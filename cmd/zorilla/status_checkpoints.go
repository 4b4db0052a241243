package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// writeCheckpoints lists the job's checkpoints: number, when it was taken,
// by which attempt, its size, and whether every rank's file is in. Their
// files are removed when the job ends; the list stays.
func writeCheckpoints(w io.Writer, r job.Record) {
	if len(r.Checkpoints) == 0 {
		return
	}
	fmt.Fprintf(w, "checkpoints: %d\n", len(r.Checkpoints))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range r.Checkpoints {
		state := "complete"
		if !c.Complete {
			size := c.Size
			if size == 0 {
				size = r.WorldSize()
			}
			state = fmt.Sprintf("%d of %d ranks", len(c.Files), size)
		}
		fmt.Fprintf(tw, "  %d\t%s\tattempt %d\t%s\t%s\n", c.Num, c.Taken.Local().Format(timeLayout), c.Attempt, proto.FormatSize(c.Bytes()), state)
	}
	tw.Flush()
}
