package job

import (
	"fmt"
	"sort"
	"strings"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// DeclineCount is how many agents declined a job for one reason.
type DeclineCount struct {
	Code   proto.DeclineCode `json:"code"`
	Detail string            `json:"detail,omitempty"`
	Agents int               `json:"agents"`
}

// MaxDeclineKinds bounds the distinct (code, detail) pairs a record keeps;
// further kinds are counted under their code alone.
const MaxDeclineKinds = 16

// maxDecliners bounds the agents a session remembers as having declined
// (so that one agent counts once, and moves to the offers if it offers
// later); beyond it, declines are no longer counted.
const maxDecliners = 1 << 16

// declines is a session's tally of the agents that declined its advert.
// The session's run goroutine owns it.
type declines struct {
	by map[peer.ID]DeclineCount // each decliner's reason (Agents unused)
}

// add counts one agent's decline; an agent that declined before keeps its
// first reason.
func (d *declines) add(from peer.ID, m proto.DeclineMsg) {
	if d.by == nil {
		d.by = map[peer.ID]DeclineCount{}
	}
	if _, seen := d.by[from]; seen || len(d.by) >= maxDecliners {
		return
	}
	d.by[from] = DeclineCount{Code: m.Code, Detail: m.Detail}
}

// offered forgets an agent's decline: it offers after all (its slots freed
// before a wider flood reached it again).
func (d *declines) offered(from peer.ID) { delete(d.by, from) }

// counts sums the declines by reason, most agents first.
func (d *declines) counts() []DeclineCount {
	sums := map[DeclineCount]int{}
	for _, c := range d.by {
		sums[c]++
	}
	out := make([]DeclineCount, 0, len(sums))
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
	if len(out) > MaxDeclineKinds {
		rest := map[proto.DeclineCode]int{}
		for _, c := range out[MaxDeclineKinds-1:] {
			rest[c.Code] += c.Agents
		}
		out = out[:MaxDeclineKinds-1]
		for code, n := range rest {
			out = append(out, DeclineCount{Code: code, Detail: "other", Agents: n})
		}
	}
	return out
}

// SeenSummary says in words how the agents that saw a job's advert
// answered: "24 agents saw the advert: 6 offered 10 slots, 12 do not allow
// you, 5 are busy, 1 lacks mem=8G". Agents that saw the advert and said
// nothing (an older agent, or one whose declines were rate-limited) are
// not counted. Empty when nobody answered.
func SeenSummary(offers []Offer, declined []DeclineCount) string {
	seen, slots := len(offers), 0
	for _, o := range offers {
		slots += o.Slots
	}
	var parts []string
	if len(offers) > 0 {
		parts = append(parts, fmt.Sprintf("%d offered %d slots", len(offers), slots))
	}
	for _, c := range declined {
		seen += c.Agents
		parts = append(parts, declineWords(c))
	}
	if seen == 0 {
		return ""
	}
	agents := "agents"
	if seen == 1 {
		agents = "agent"
	}
	return fmt.Sprintf("%d %s saw the advert: %s", seen, agents, strings.Join(parts, ", "))
}

// declineWords says one count in words, with the verb agreeing.
func declineWords(c DeclineCount) string {
	one := c.Agents == 1
	verb := func(s, p string) string {
		if one {
			return s
		}
		return p
	}
	switch c.Code {
	case proto.DeclinePolicy:
		return fmt.Sprintf("%d %s not allow you", c.Agents, verb("does", "do"))
	case proto.DeclineBusy:
		return fmt.Sprintf("%d %s busy", c.Agents, verb("is", "are"))
	case proto.DeclineSlots:
		return fmt.Sprintf("%d %s no free slot", c.Agents, verb("has", "have"))
	case proto.DeclineDraining:
		return fmt.Sprintf("%d %s stopping", c.Agents, verb("is", "are"))
	case proto.DeclineSize:
		return fmt.Sprintf("%d %s only jobs of %s processes", c.Agents, verb("takes", "take"), c.Detail)
	case proto.DeclineNetwork:
		return fmt.Sprintf("%d %s jobs only loopback, so MPICH ranks there cannot reach other hosts (their owner can allow it with --job-network host)",
			c.Agents, verb("gives", "give"))
	default: // requirement, memory
		what := c.Detail
		if what == "" {
			what = string(c.Code)
		}
		return fmt.Sprintf("%d %s %s", c.Agents, verb("lacks", "lack"), what)
	}
}
