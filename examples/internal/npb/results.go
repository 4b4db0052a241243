package npb

import (
	"fmt"
	"io"
	"strings"
)

// Version is printed in the results block: the NPB release whose
// algorithms, sizes and verification values these ports follow.
const Version = "3.4"

// Results is what a benchmark reports at the end of a run, printed by Print
// in the layout of NPB's print_results.
type Results struct {
	Name       string  // benchmark, "IS" or "EP"
	Class      Class   // problem class
	Size       string  // problem size as NPB prints it ("65536", "33554432")
	Iterations int     // timed iterations (0 for EP, as NPB)
	Seconds    float64 // timed wall-clock seconds, the slowest rank's
	Procs      int     // number of ranks
	Mops       float64 // millions of operations per second, all ranks
	Operation  string  // what one operation is ("keys ranked")
	Verified   bool    // whether NPB's verification passed
}

// Print writes the results block to w.
func (r Results) Print(w io.Writer) error {
	per := 0.0
	if r.Procs > 0 {
		per = r.Mops / float64(r.Procs)
	}
	verdict := "SUCCESSFUL"
	if !r.Verified {
		verdict = "UNSUCCESSFUL"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n\n %s Benchmark Completed.\n", r.Name)
	line := func(label, value string) { fmt.Fprintf(&b, " %-16s= %24s\n", label, value) }
	line("Class", r.Class.String())
	line("Size", r.Size)
	line("Iterations", fmt.Sprint(r.Iterations))
	line("Time in seconds", fmt.Sprintf("%.2f", r.Seconds))
	line("Total processes", fmt.Sprint(r.Procs))
	line("Mop/s total", fmt.Sprintf("%.2f", r.Mops))
	line("Mop/s/process", fmt.Sprintf("%.2f", per))
	line("Operation type", r.Operation)
	line("Verification", verdict)
	line("Version", Version)
	line("Implementation", "Go, zorilla mpi")
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}
