package proto

import (
	"time"

	"github.com/libp2p/go-libp2p/core/protocol"
)

// CopyProtocol: agent -> agent holding checkpoint copies; one CopyRequest,
// then for "put" Size raw bytes, answered by a FetchReply (for "get",
// followed by Size raw bytes). A host puts each rank's checkpoint file on
// one more agent near it, so that the loss of the submitter's copy loses
// nothing.
const CopyProtocol protocol.ID = "/zorilla/ckpt/1.0.0"

// Operations of CopyRequest.
const (
	CopyPut  = "put"
	CopyGet  = "get"
	CopyDrop = "drop" // Hashes, or every copy of the job when empty
)

// MaxCopyRequest bounds a CopyRequest (a drop lists up to MaxProcs hashes).
const MaxCopyRequest = 512 << 10

// CopyTTL is how long a holder keeps a job's copies after the last request
// about them.
const CopyTTL = time.Hour

// CopyRequest asks a holder to keep, send or drop a job's checkpoint file.
type CopyRequest struct {
	Op     string   `json:"op"`
	Job    JobID    `json:"job"`
	Key    string   `json:"key"`
	Hash   string   `json:"hash,omitempty"`
	Size   int64    `json:"size,omitempty"`
	Hashes []string `json:"hashes,omitempty"`
}
