package chunk

import (
	"context"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// Pauses between rounds of asking peers for a chunk they do not have yet.
const (
	pauseMin = 10 * time.Millisecond
	pauseMax = 200 * time.Millisecond
)

var timeNow = time.Now

type outcome int

const (
	gotIt  outcome = iota
	notYet         // missing or busy: ask again later
	failed         // unreachable, refused, or a bad chunk: do not ask again
)

// tryPeer asks peer q for chunk c and stores it if it matches the manifest.
func (s *Service) tryPeer(ctx context.Context, f Fetch, p *partial, pl *plan, q peer.ID, c int) outcome {
	if p.has(c) {
		return gotIt
	}
	rep, b, err := s.ask(ctx, q, f, c)
	switch {
	case rep.Error != "":
		// A host that has not had the job's commit yet refuses too:
		// ask again later, up to strikes times.
		if pl.strike(q) {
			return failed
		}
		return notYet
	case err != nil:
		log.Debugw("peer failed", "peer", q, "chunk", c, "err", err)
		return failed
	case rep.Missing || rep.Busy:
		return notYet
	}
	ok, err := p.put(c, b)
	if err != nil || !ok {
		if !ok && err == nil {
			s.corrupt.Add(1)
			log.Debugw("bad chunk from peer", "peer", q, "chunk", c)
		}
		return failed
	}
	s.fetchedPeers.Add(int64(len(b)))
	return gotIt
}

// fromOwner fetches chunk c from the owner, waiting while it is busy.
func (s *Service) fromOwner(ctx context.Context, f Fetch, p *partial, c int) error {
	if p.has(c) {
		return nil
	}
	return s.retryOwner(ctx, func() (bool, error) {
		rep, b, err := s.ask(ctx, f.Owner, f, c)
		if err != nil {
			return false, fmt.Errorf("chunk %d from the submitter: %w", c, err)
		}
		if rep.Missing || rep.Busy {
			return true, fmt.Errorf("chunk %d: the submitter is busy", c)
		}
		ok, err := p.put(c, b)
		if err != nil {
			return false, err
		}
		if !ok {
			s.corrupt.Add(1)
			return false, fmt.Errorf("chunk %d from the submitter does not match its manifest", c)
		}
		s.fetchedOwner.Add(int64(len(b)))
		return false, nil
	})
}
