package worker

import (
	"errors"
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/internal/blob"
	"github.com/zorilla-p2p/zorilla/internal/chunk"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// SetChunks gives the worker the agent's chunk service: it then stages
// files from the job's other hosts (when cfg.PeerStaging) and serves the
// files of its running jobs to their other hosts.
func (s *Service) SetChunks(c *chunk.Service) {
	s.chunks.Store(c)
	c.Allow(s.grantChunks)
}

// grantChunks lets a host of a job running here have that job's files,
// asked for with the job's key.
func (s *Service) grantChunks(id, key string, h blob.Hash, from peer.ID) (ok, owner bool) {
	s.mu.Lock()
	r := s.jobs[proto.JobID(id)]
	s.mu.Unlock()
	if r == nil || r.c.Key != key || !isHost(r.c, from) {
		return false, false
	}
	for _, f := range append([]proto.FileRef{r.c.Program}, r.c.Inputs...) {
		if f.Hash == h.String() {
			return true, false
		}
	}
	return false, false
}

func isHost(c proto.Commit, p peer.ID) bool {
	for _, h := range c.Hosts {
		if h.Peer == p {
			return true
		}
	}
	return false
}

// fetchChunks stages blob h of job r from its hosts and submitter. done is
// false when the submitter sent no manifest (an older agent): the caller
// then fetches the whole file.
func (r *running) fetchChunks(cs *chunk.Service, h blob.Hash, limit int64) (done bool, err error) {
	hosts := make([]peer.ID, len(r.c.Hosts))
	for i, x := range r.c.Hosts {
		hosts[i] = x.Peer
	}
	_, err = cs.Fetch(r.ctx, chunk.Fetch{Job: string(r.id), Key: r.c.Key, Hash: h, Limit: limit,
		Owner: r.submitter, Hosts: hosts, Dir: r.dir})
	switch {
	case errors.Is(err, chunk.ErrNoManifest):
		log.Debugw("no manifest, fetching the whole file", "job", r.id, "hash", h, "err", err)
		return false, nil
	case errors.Is(err, chunk.ErrTooLarge):
		s := r.svc
		s.abuse.refused.Add(RefusedStageTooLarge)
		return true, fmt.Errorf("%w: %v (at most %d per file, %d per job)", ErrTooLarge, err, s.cfg.MaxStage, s.cfg.Abuse.MaxJobStage)
	case err != nil:
		return true, err
	}
	return true, nil
}
