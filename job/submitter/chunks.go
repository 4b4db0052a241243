package submitter

import (
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/internal/blob"
	"github.com/zorilla-p2p/zorilla/job"
)

// GrantChunks lets any peer holding a job's key have that job's files in
// chunks (package chunk) from this submitter, as the job's owner: the
// chunk service's Grant for the jobs submitted here.
func (s *Submitter) GrantChunks(id, key string, h blob.Hash, _ peer.ID) (ok, owner bool) {
	ss := s.session(job.ID(id))
	if ss == nil || !ss.key.Equal(job.Key(key)) || !ss.mayFetch(h.String()) {
		return false, false
	}
	return true, true
}

// WholeFilesServed is the bytes of whole files this submitter sent on
// FetchProtocol (staging without chunks).
func (s *Submitter) WholeFilesServed() int64 { return s.wholeServed.Load() }
