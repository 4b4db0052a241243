package job

import (
	"encoding/json"
	"fmt"

	"github.com/zorilla-p2p/zorilla/internal/wire"
)

// ID names a job across the whole network. It is chosen by the submitter.
type ID string

// Requirements are what a host must have to take part in a job.
type Requirements struct {
	OS        string   `json:"os,omitempty"`         // GOOS, e.g. "linux"; empty: any
	Arch      string   `json:"arch,omitempty"`       // GOARCH, e.g. "amd64"; empty: any
	MinCores  int      `json:"min_cores,omitempty"`  // cores the host must offer in all
	MinMemory int64    `json:"min_memory,omitempty"` // bytes of memory the host must offer
	Labels    []string `json:"labels,omitempty"`     // every label ("gpu", "site=nancy") must be set on the host
}

// Need is what a job advert asks for. It travels as the advert's body.
type Need struct {
	Job ID           `json:"job"`
	N   int          `json:"n"` // processes
	R   int          `json:"r"` // replicas of each process, on distinct hosts
	Req Requirements `json:"req"`
}

// MaxNeedSize bounds an encoded Need; it must fit in an advert's body.
const MaxNeedSize = 4 << 10

// EncodeNeed encodes a Need for an advert body.
func EncodeNeed(n Need) ([]byte, error) {
	b, err := json.Marshal(n)
	if err != nil {
		return nil, fmt.Errorf("job: encode need: %w", err)
	}
	if len(b) > MaxNeedSize {
		return nil, fmt.Errorf("job: need of %d bytes exceeds %d", len(b), MaxNeedSize)
	}
	return b, nil
}

// DecodeNeed decodes and checks an advert body. It never trusts the sender:
// sizes and counts are bounded.
func DecodeNeed(b []byte) (Need, error) {
	var n Need
	if len(b) > MaxNeedSize {
		return n, fmt.Errorf("job: need of %d bytes exceeds %d", len(b), MaxNeedSize)
	}
	if err := wire.DecodeJSON(b, &n); err != nil {
		return n, fmt.Errorf("job: decode need: %w", err)
	}
	if n.Job == "" || n.N < 1 || n.R < 1 || n.N > MaxProcs || n.R > MaxReplicas {
		return n, fmt.Errorf("job: need out of range: job %q n=%d r=%d", n.Job, n.N, n.R)
	}
	return n, nil
}

// Bounds on what one job may ask for.
const (
	MaxProcs    = 100000
	MaxReplicas = 16
)
