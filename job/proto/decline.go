package proto

import (
	"fmt"
	"strings"

	"github.com/libp2p/go-libp2p/core/protocol"
)

// DeclineProtocol: worker -> submitter, one DeclineMsg saying why the
// worker makes no offer for a job it saw advertised. No answer: the
// submitter only counts it. Workers rate-limit what they send.
const DeclineProtocol protocol.ID = "/zorilla/decline/1.0.0"

// MaxDeclineSize bounds a DeclineMsg on the wire.
const MaxDeclineSize = 1 << 10

// MaxDeclineDetail bounds a decline's detail ("mem=8G", "os=windows").
const MaxDeclineDetail = 64

// DeclineCode says, in one word, why a worker declined an advert.
type DeclineCode string

// The reasons a worker declines. Requirement and Memory carry a Detail in
// the syntax of --require (os=windows, arch=arm64, cores=8, label=gpu,
// mem=8G).
const (
	DeclinePolicy      DeclineCode = "policy"      // the owner does not run this submitter's jobs
	DeclineBusy        DeclineCode = "busy"        // J applications already run or are reserved
	DeclineSlots       DeclineCode = "slots"       // no free process slot (P, cores in use)
	DeclineRequirement DeclineCode = "requirement" // os, arch, label or cores not met
	DeclineMemory      DeclineCode = "memory"      // not enough memory free
	DeclineDraining    DeclineCode = "draining"    // the agent is stopping
	DeclineSize        DeclineCode = "size"        // the job is larger than the owner takes (Detail: "n*r<=4096")
	// DeclineNetwork: this host gives jobs a network with only loopback
	// (agent --job-network isolated), and the job's MPICH ranks (Need.PMI)
	// would have to reach ranks on other hosts (Detail:
	// "job-network=isolated").
	DeclineNetwork DeclineCode = "network"
	// DeclineYield is not a refusal of an advert: the worker tells a job
	// holding an uncommitted lease there that an earlier job waits for
	// those slots; a job that cannot be placed yet gives them back and
	// stays in the worker's queue.
	DeclineYield DeclineCode = "yield"
)

var declineCodes = map[DeclineCode]bool{DeclinePolicy: true, DeclineBusy: true, DeclineSlots: true,
	DeclineRequirement: true, DeclineMemory: true, DeclineDraining: true, DeclineSize: true, DeclineYield: true,
	DeclineNetwork: true}

// DeclineMsg is a worker's "no" to an advert, with the reason.
type DeclineMsg struct {
	Job    JobID       `json:"job"`
	Code   DeclineCode `json:"code"`
	Detail string      `json:"detail,omitempty"`
}

// Validate checks a decline read from the wire.
func (m DeclineMsg) Validate() error {
	if _, err := ParseJobID(string(m.Job)); err != nil {
		return fmt.Errorf("decline: %w", err)
	}
	if !declineCodes[m.Code] {
		return fmt.Errorf("decline: unknown code %q", m.Code)
	}
	if len(m.Detail) > MaxDeclineDetail || strings.ContainsFunc(m.Detail, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return fmt.Errorf("decline: detail of %d bytes, or with control characters", len(m.Detail))
	}
	return nil
}
