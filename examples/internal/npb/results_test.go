package npb

import (
	"strings"
	"testing"
)

func TestResultsPrint(t *testing.T) {
	var b strings.Builder
	r := Results{Name: "IS", Class: 'S', Size: "65536", Iterations: 10, Seconds: 0.0123,
		Procs: 4, Mops: 53.28, Operation: "keys ranked", Verified: true}
	if err := r.Print(&b); err != nil {
		t.Fatal(err)
	}
	want := `

 IS Benchmark Completed.
 Class           =                        S
 Size            =                    65536
 Iterations      =                       10
 Time in seconds =                     0.01
 Total processes =                        4
 Mop/s total     =                    53.28
 Mop/s/process   =                    13.32
 Operation type  =              keys ranked
 Verification    =               SUCCESSFUL
 Version         =                      3.4
 Implementation  =          Go, zorilla mpi

`
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	r.Verified = false
	r.Print(&b)
	if !strings.Contains(b.String(), "Verification    =             UNSUCCESSFUL\n") {
		t.Fatalf("failed run prints\n%s", b.String())
	}
}
