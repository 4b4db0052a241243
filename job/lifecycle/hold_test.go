package lifecycle

import (
	"testing"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

func TestHopeless(t *testing.T) {
	busy := []job.DeclineCount{{Code: proto.DeclinePolicy, Agents: 3}, {Code: proto.DeclineBusy, Agents: 1}}
	never := []job.DeclineCount{{Code: proto.DeclinePolicy, Agents: 3}, {Code: proto.DeclineRequirement, Detail: "mem=999T", Agents: 5}}
	for _, tt := range []struct {
		name            string
		quiet, feasible bool
		declined        []job.DeclineCount
		want            bool
	}{
		{"answers still coming", false, false, never, false},
		{"feasible", true, true, never, false},
		{"nobody can ever take it", true, false, never, true},
		{"no answer at all, quiet", true, false, nil, true},
		{"an agent is busy: wait for it", true, false, busy, false},
		{"memory in use may free", true, false, []job.DeclineCount{{Code: proto.DeclineMemory, Agents: 1}}, false},
		{"no free slot may free", true, false, []job.DeclineCount{{Code: proto.DeclineSlots, Agents: 1}}, false},
		// An offer given back to an earlier job: the agent keeps the job
		// in its line and offers again (the swap turns).
		{"an offer yielded to an earlier job comes back", true, false, []job.DeclineCount{{Code: proto.DeclineYield, Agents: 2}}, false},
	} {
		if got := Hopeless(tt.quiet, tt.feasible, tt.declined); got != tt.want {
			t.Errorf("%s: Hopeless = %v, want %v", tt.name, got, tt.want)
		}
	}
}
