package job

import (
	"fmt"
	"strings"

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
