package worker

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/internal/blob"
	"github.com/zorilla-p2p/zorilla/internal/wire"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// fetchInto puts file f of job r at path with mode: from the local blob
// store when it already holds it, else fetched into the store first (in
// chunks from the job's hosts and submitter, or whole from the submitter).
// Either way the bytes are verified against f.Hash. left is what the job
// may still stage (AbuseLimits.MaxJobStage less its files so far); it
// returns the file's size.
func (r *running) fetchInto(f proto.FileRef, path string, mode os.FileMode, left int64) (int64, error) {
	s := r.svc
	h, err := blob.ParseHash(f.Hash)
	if err != nil {
		return 0, err
	}
	if !s.blobs.Has(h) {
		done := false
		if cs := s.chunks.Load(); cs != nil && s.cfg.PeerStaging {
			if done, err = r.fetchChunks(cs, h, min(left, s.cfg.MaxStage)); err != nil {
				return 0, err
			}
		}
		if !done {
			if err := s.fetch(r.ctx, r.submitter, r.id, r.c.Key, h, min(left, s.cfg.MaxStage)); err != nil {
				return 0, err
			}
		}
		s.staged.markFetched(h)
	}
	if err := s.blobs.CopyTo(h, path, mode); err != nil {
		return 0, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	if fi.Size() > left {
		s.abuse.refused.Add(RefusedStageTooLarge)
		return 0, fmt.Errorf("%w: the job's files pass the %d bytes this agent stages per job", ErrTooLarge, s.cfg.Abuse.MaxJobStage)
	}
	return fi.Size(), nil
}

// fetch asks the submitter for blob h and stores it, refusing bytes that do
// not hash to h.
func (s *Service) fetch(ctx context.Context, from peer.ID, id proto.JobID, key string, h blob.Hash, limit int64) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	st, err := s.ep.Open(ctx, from, proto.FetchProtocol)
	if err != nil {
		return err
	}
	defer st.Close()
	stop := context.AfterFunc(ctx, func() { _ = st.Reset() })
	defer stop()
	if err := wire.WriteJSON(st, proto.FetchRequest{Job: id, Key: key, Hash: h.String()}); err != nil {
		return err
	}
	br := bufio.NewReader(st)
	var rep proto.FetchReply
	if err := wire.ReadJSON(br, proto.MaxReplySize, &rep); err != nil {
		return err
	}
	if rep.Error != "" {
		return fmt.Errorf("submitter: %s", rep.Error)
	}
	if rep.Size < 0 || rep.Size > limit {
		s.abuse.refused.Add(RefusedStageTooLarge)
		return fmt.Errorf("%w: file of %d bytes exceeds the %d bytes left to stage (at most %d per file, %d per job)",
			ErrTooLarge, rep.Size, limit, s.cfg.MaxStage, s.cfg.Abuse.MaxJobStage)
	}
	n, err := s.blobs.PutHash(io.LimitReader(br, rep.Size), h, rep.Size)
	if err != nil {
		return fmt.Errorf("fetch %s: %w", h, err)
	}
	if n != rep.Size {
		return fmt.Errorf("fetch %s: got %d bytes, the submitter announced %d", h, n, rep.Size)
	}
	return nil
}

// stage copies the program and inputs into the job folder, fetching from
// the submitter what the local store does not hold, verified by sha256.
func (r *running) stage() error {
	if err := os.MkdirAll(r.dir, 0o700); err != nil {
		return fmt.Errorf("job folder: %w", err)
	}
	files := append([]proto.FileRef{r.c.Program}, r.c.Inputs...)
	left := r.svc.cfg.Abuse.MaxJobStage
	for i, f := range files {
		mode := os.FileMode(0o600)
		if i == 0 {
			mode = 0o700
		}
		if h, err := blob.ParseHash(f.Hash); err == nil {
			r.svc.staged.acquire(h)
			r.held = append(r.held, h)
		}
		n, err := r.fetchInto(f, filepath.Join(r.dir, f.Name), mode, left)
		if err != nil {
			return fmt.Errorf("stage %s: %w", f.Name, err)
		}
		left -= n
	}
	return r.stageRestore(left)
}
