package worker

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/internal/blob"
	"github.com/zorilla-p2p/zorilla/internal/rpc"
	"github.com/zorilla-p2p/zorilla/internal/wire"
	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/mpi/router"
)

// Copies of checkpoint files kept for other hosts (job/checkpoint_copy.go
// says why). This agent keeps a copy only for a job it runs, put with that
// job's key, within the owner's staging bounds; it gives it back and drops
// it only to holders of the key; it forgets a job's copies proto.CopyTTL
// after the last request about them (checked at every request).

// copyStore is the copies this agent holds, by job.
type copyStore struct {
	mu   sync.Mutex // guards jobs
	jobs map[proto.JobID]*heldCopies
}

type heldCopies struct {
	key    string
	sizes  map[blob.Hash]int64
	bytes  int64
	seenAt time.Time
}

// handleCopy serves one CopyRequest.
func (s *Service) handleCopy(ctx context.Context, from peer.ID, st rpc.Stream) {
	_ = st.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(st)
	var req proto.CopyRequest
	if err := wire.ReadJSON(br, proto.MaxCopyRequest, &req); err != nil {
		_ = st.Reset()
		return
	}
	s.expireCopies(time.Now())
	var err error
	switch req.Op {
	case proto.CopyPut:
		err = s.putCopy(st, br, req)
	case proto.CopyGet:
		err = s.getCopy(st, req)
	case proto.CopyDrop:
		err = s.dropCopy(req)
		if err == nil {
			err = wire.WriteJSON(st, proto.FetchReply{})
		}
	default:
		err = fmt.Errorf("unknown operation %q", req.Op)
	}
	if err != nil {
		_ = wire.WriteJSON(st, proto.FetchReply{Error: err.Error()})
	}
	_ = st.Close()
}

// putCopy keeps a copy for a job running here.
func (s *Service) putCopy(st rpc.Stream, br *bufio.Reader, req proto.CopyRequest) error {
	h, err := blob.ParseHash(req.Hash)
	if err != nil {
		return err
	}
	s.mu.Lock()
	r := s.jobs[req.Job]
	s.mu.Unlock()
	if r == nil || !sameKey(r.c.Key, req.Key) {
		return errors.New("no such job here, or wrong key")
	}
	held := s.held(req.Job, req.Key)
	if req.Size < 0 || req.Size > s.cfg.MaxStage || held+req.Size > s.cfg.Abuse.MaxJobStage {
		return fmt.Errorf("%d bytes: this agent keeps at most %d per file and %d per job", req.Size, s.cfg.MaxStage, s.cfg.Abuse.MaxJobStage)
	}
	_ = st.SetDeadline(time.Now().Add(10 * time.Minute))
	n, err := s.writeCopy(req.Job, h, io.LimitReader(br, req.Size))
	if err != nil {
		return err
	}
	if n != req.Size {
		_ = os.Remove(s.copyPath(req.Job, h))
		return fmt.Errorf("got %d bytes, %d announced", n, req.Size)
	}
	s.copies.mu.Lock()
	c := s.copies.jobs[req.Job]
	if c == nil {
		c = &heldCopies{key: req.Key, sizes: map[blob.Hash]int64{}}
		if s.copies.jobs == nil {
			s.copies.jobs = map[proto.JobID]*heldCopies{}
		}
		s.copies.jobs[req.Job] = c
	}
	if _, ok := c.sizes[h]; !ok {
		c.sizes[h] = n
		c.bytes += n
	}
	c.seenAt = time.Now()
	s.copies.mu.Unlock()
	return wire.WriteJSON(st, proto.FetchReply{Size: n})
}

// held is the bytes of the job's copies here (0 for another key).
func (s *Service) held(id proto.JobID, key string) int64 {
	s.copies.mu.Lock()
	defer s.copies.mu.Unlock()
	if c := s.copies.jobs[id]; c != nil && sameKey(c.key, key) {
		return c.bytes
	}
	return 0
}

// getCopy sends a copy to a holder of the job's key.
func (s *Service) getCopy(st rpc.Stream, req proto.CopyRequest) error {
	h, err := blob.ParseHash(req.Hash)
	if err != nil {
		return err
	}
	s.copies.mu.Lock()
	c := s.copies.jobs[req.Job]
	ok := c != nil && sameKey(c.key, req.Key)
	if ok {
		_, ok = c.sizes[h]
		c.seenAt = time.Now()
	}
	s.copies.mu.Unlock()
	if !ok {
		return errors.New("no such copy here, or wrong key")
	}
	f, err := os.Open(s.copyPath(req.Job, h))
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	_ = st.SetDeadline(time.Now().Add(10 * time.Minute))
	if err := wire.WriteJSON(st, proto.FetchReply{Size: size}); err != nil {
		return err
	}
	if _, err := io.Copy(st, f); err != nil {
		_ = st.Reset() // a corrupt copy ends the stream short: the receiver's hash check refuses it
		return nil
	}
	return nil
}

// dropCopy removes copies of a job (all of them when none is named).
func (s *Service) dropCopy(req proto.CopyRequest) error {
	s.copies.mu.Lock()
	c := s.copies.jobs[req.Job]
	if c == nil || !sameKey(c.key, req.Key) {
		s.copies.mu.Unlock()
		return nil // nothing to drop: the same answer for a wrong key
	}
	var gone []blob.Hash
	if len(req.Hashes) == 0 {
		for h := range c.sizes {
			gone = append(gone, h)
		}
	}
	for _, x := range req.Hashes {
		if h, err := blob.ParseHash(x); err == nil {
			if _, ok := c.sizes[h]; ok {
				gone = append(gone, h)
			}
		}
	}
	for _, h := range gone {
		c.bytes -= c.sizes[h]
		delete(c.sizes, h)
	}
	if len(c.sizes) == 0 {
		delete(s.copies.jobs, req.Job)
	}
	s.copies.mu.Unlock()
	s.removeCopies(req.Job, gone)
	return nil
}

// expireCopies forgets the copies of jobs nobody asked about for CopyTTL.
func (s *Service) expireCopies(now time.Time) {
	gone := map[proto.JobID][]blob.Hash{}
	s.copies.mu.Lock()
	for id, c := range s.copies.jobs {
		if now.Sub(c.seenAt) > proto.CopyTTL {
			for h := range c.sizes {
				gone[id] = append(gone[id], h)
			}
			delete(s.copies.jobs, id)
		}
	}
	s.copies.mu.Unlock()
	for id, hs := range gone {
		s.removeCopies(id, hs)
	}
}

// The copies live in the jobs folder, under .copies/JOB/HASH: an agent
// that starts again sweeps the jobs folder, and with it the copies whose
// index it lost.
func (s *Service) copyPath(id proto.JobID, h blob.Hash) string {
	return filepath.Join(s.cfg.JobsDir, ".copies", string(id), h.String())
}

// writeCopy stores what r yields as copy h of job id if its sha256 is h.
func (s *Service) writeCopy(id proto.JobID, h blob.Hash, r io.Reader) (int64, error) {
	dir := filepath.Dir(s.copyPath(id, h))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, err
	}
	f, err := os.CreateTemp(dir, ".part-*")
	if err != nil {
		return 0, err
	}
	sum := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, sum), r)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && blob.Hash(sum.Sum(nil)) != h {
		err = fmt.Errorf("%w: the copy's bytes do not hash to %s", blob.ErrCorrupt, h)
	}
	if err == nil {
		err = os.Rename(f.Name(), s.copyPath(id, h))
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return 0, err
	}
	return n, nil
}

// removeCopies removes copies of job id, and its folder once empty.
func (s *Service) removeCopies(id proto.JobID, hs []blob.Hash) {
	for _, h := range hs {
		_ = os.Remove(s.copyPath(id, h))
	}
	dir := filepath.Join(s.cfg.JobsDir, ".copies", string(id))
	if es, err := os.ReadDir(dir); err == nil && len(es) == 0 {
		_ = os.Remove(dir)
		_ = os.Remove(filepath.Dir(dir)) // fails while other jobs have copies
	}
}

func sameKey(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// copyHolder is the agent a rank's file gets its extra copy on: the next
// host of the job after this one, other than the submitter; "" when the
// job has no such host.
func (r *running) copyHolder() peer.ID {
	self, hosts := r.svc.h.ID(), r.c.Hosts
	me := 0
	for i, h := range hosts {
		if h.Peer == self {
			me = i
		}
	}
	for k := 1; k < len(hosts); k++ {
		if p := hosts[(me+k)%len(hosts)].Peer; p != self && p != r.submitter {
			return p
		}
	}
	return ""
}

// putCopyOn puts a rank's file on holder.
func (r *running) putCopyOn(holder peer.ID, path string, sv router.Saved) error {
	ctx, cancel := context.WithTimeout(r.ctx, 10*time.Minute)
	defer cancel()
	f, err := openInJob(r.dir, path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := r.svc.ep.Open(ctx, holder, proto.CopyProtocol)
	if err != nil {
		return err
	}
	defer st.Close()
	stop := context.AfterFunc(ctx, func() { _ = st.Reset() })
	defer stop()
	req := proto.CopyRequest{Op: proto.CopyPut, Job: r.id, Key: r.c.Key, Hash: blob.Hash(sv.Sum).String(), Size: sv.Size}
	if err := wire.WriteJSON(st, req); err != nil {
		return err
	}
	if _, err := io.CopyN(st, f, sv.Size); err != nil {
		return err
	}
	var rep proto.FetchReply
	if err := wire.ReadJSON(bufio.NewReader(st), proto.MaxReplySize, &rep); err != nil {
		return err
	}
	if rep.Error != "" {
		return errors.New(rep.Error)
	}
	return nil
}

// fetchCopy takes blob h of the job from a holder of a copy.
func (s *Service) fetchCopy(ctx context.Context, from peer.ID, id proto.JobID, key string, h blob.Hash, limit int64) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	st, err := s.ep.Open(ctx, from, proto.CopyProtocol)
	if err != nil {
		return err
	}
	defer st.Close()
	stop := context.AfterFunc(ctx, func() { _ = st.Reset() })
	defer stop()
	if err := wire.WriteJSON(st, proto.CopyRequest{Op: proto.CopyGet, Job: id, Key: key, Hash: h.String()}); err != nil {
		return err
	}
	br := bufio.NewReader(st)
	var rep proto.FetchReply
	if err := wire.ReadJSON(br, proto.MaxReplySize, &rep); err != nil {
		return err
	}
	if rep.Error != "" {
		return errors.New(rep.Error)
	}
	if rep.Size < 0 || rep.Size > limit {
		return fmt.Errorf("copy of %d bytes, at most %d staged", rep.Size, limit)
	}
	n, err := s.blobs.PutHash(io.LimitReader(br, rep.Size), h, rep.Size)
	if err == nil && n != rep.Size {
		err = fmt.Errorf("got %d bytes, %d announced", n, rep.Size)
	}
	return err
}

// stageRestore stages the job's checkpoint files: each from the submitter,
// or, when that fails (unreachable, or its copy fails the hash check),
// from the other agents holding a copy, in order.
func (r *running) stageRestore(left int64) error {
	s := r.svc
	for _, rs := range r.c.Restore {
		h, err := blob.ParseHash(rs.File.Hash)
		if err != nil {
			return err
		}
		s.staged.acquire(h)
		r.held = append(r.held, h)
		if !s.blobs.Has(h) {
			err := s.fetch(r.ctx, r.submitter, r.id, r.c.Key, h, min(left, s.cfg.MaxStage))
			for _, p := range rs.Copies {
				if err == nil {
					break
				}
				log.Infow("checkpoint copy failed; trying another", "job", r.id, "rank", rs.Rank, "err", err, "next", p)
				err = s.fetchCopy(r.ctx, p, r.id, r.c.Key, h, min(left, s.cfg.MaxStage))
			}
			if err != nil {
				return fmt.Errorf("checkpoint %d of rank %d: no copy could be staged: %w", rs.Num, rs.Rank, err)
			}
			s.staged.markFetched(h)
		}
		if err := s.blobs.CopyTo(h, filepath.Join(r.dir, rs.File.Name), 0o600); err != nil {
			return err
		}
		fi, err := os.Stat(filepath.Join(r.dir, rs.File.Name))
		if err != nil {
			return err
		}
		if left -= fi.Size(); left < 0 {
			return fmt.Errorf("%w: the job's files pass the %d bytes this agent stages per job", ErrTooLarge, s.cfg.Abuse.MaxJobStage)
		}
	}
	return nil
}
