package lifecycle

import (
	"sort"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// maxDecliners bounds the agents a machine remembers as having declined
// (so that one agent counts once, and moves to the offers if it offers
// later); beyond it, declines are no longer counted.
const maxDecliners = 1 << 16

// declines is a machine's tally of the agents that declined its advert.
type declines struct {
	by map[peer.ID]job.DeclineCount // each decliner's reason (Agents unused)
}

// add counts one agent's decline; an agent that declined before keeps its
// first reason.
func (d *declines) add(from peer.ID, m proto.DeclineMsg) {
	if d.by == nil {
		d.by = map[peer.ID]job.DeclineCount{}
	}
	if _, seen := d.by[from]; seen || len(d.by) >= maxDecliners {
		return
	}
	d.by[from] = job.DeclineCount{Code: m.Code, Detail: m.Detail}
}

// offered forgets an agent's decline: it offers after all (its slots freed
// before a wider flood reached it again).
func (d *declines) offered(from peer.ID) { delete(d.by, from) }

// counts sums the declines by reason, most agents first.
func (d *declines) counts() []job.DeclineCount {
	sums := map[job.DeclineCount]int{}
	for _, c := range d.by {
		sums[c]++
	}
	out := make([]job.DeclineCount, 0, len(sums))
	for k, n := range sums {
		k.Agents = n
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Agents != out[j].Agents {
			return out[i].Agents > out[j].Agents
		}
		if out[i].Code != out[j].Code {
			return out[i].Code < out[j].Code
		}
		return out[i].Detail < out[j].Detail
	})
	if len(out) > job.MaxDeclineKinds {
		rest := map[proto.DeclineCode]int{}
		for _, c := range out[job.MaxDeclineKinds-1:] {
			rest[c.Code] += c.Agents
		}
		out = out[:job.MaxDeclineKinds-1]
		for code, n := range rest {
			out = append(out, job.DeclineCount{Code: code, Detail: "other", Agents: n})
		}
	}
	return out
}
