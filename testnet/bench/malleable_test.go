package bench

import (
	"strings"
	"testing"
	"time"
)

// TestWorkloadFigures: makespan, mean completion, largest wait and
// utilization from the jobs' spans, and the table that prints them.
func TestWorkloadFigures(t *testing.T) {
	s := time.Second
	r := WorkloadRun{Agents: 4, Jobs: []WorkloadSpan{
		{Job: WorkloadJob{At: 0, Min: 2, Max: 4, Steps: 10}, Start: 1 * s, End: 11 * s, RankSeconds: 30, Verified: true, Sizes: "2>4"},
		{Job: WorkloadJob{At: 2 * s, Min: 2, Max: 2, Steps: 5}, Start: 5 * s, End: 9 * s, RankSeconds: 8, Verified: true, Sizes: "2"},
	}}
	if r.Makespan() != 11*s || r.MeanCompletion() != 9*s || r.LargestWait() != 3*s {
		t.Fatalf("makespan %v, mean completion %v, largest wait %v", r.Makespan(), r.MeanCompletion(), r.LargestWait())
	}
	if u := r.Utilization(); u < 0.863 || u > 0.864 { // 38 of 44 slot-seconds
		t.Fatalf("utilization %v", u)
	}
	rigid := r
	rigid.Malleable = false
	r.Malleable = true
	var b strings.Builder
	if err := WriteWorkloadTable(&b, []WorkloadRun{rigid, r}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"2:4", "2>4", "malleable / rigid", "86%"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

// TestResizeTable: each change with its two parts and their sum.
func TestResizeTable(t *testing.T) {
	var b strings.Builder
	_ = WriteResizeTable(&b, []ResizeStep{{What: "from 4 to 8 processes: grew", Stop: 100 * time.Millisecond, Restart: 300 * time.Millisecond}})
	if !strings.Contains(b.String(), "0.10 s") || !strings.Contains(b.String(), "0.40 s") {
		t.Fatalf("%s", b.String())
	}
}
