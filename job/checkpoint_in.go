package job

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/internal/blob"
)

// The submitter's intake of checkpoint files: RepCheckpoint chunks written
// to a temporary file and hashed as they come, checked whole against what
// the rank announced, then kept in the blob store and added to the
// manifest (checkpoint.go).

// ckptIn is a checkpoint file arriving.
type ckptIn struct {
	part CheckpointPart
	from peer.ID
	f    *os.File
	sum  hash.Hash
	n    int64
	at   time.Time // when its first chunk came
}

// checkpointChunk takes one chunk of a rank's checkpoint file. A file
// whose bytes do not hash to what its rank announced is dropped, and so is
// its checkpoint (it can never be complete).
func (ss *session) checkpointChunk(from peer.ID, e Report) {
	if err := ss.takeChunk(from, e); err != nil {
		ss.feed.append(Update{Kind: "output", Rank: -1, Stream: "stderr",
			Line: fmt.Sprintf("checkpoint file of rank %d not kept: %v", e.Rank, err)})
		if e.Ckpt != nil {
			ss.dropIn(e.Rank, e.Ckpt.Num)
		}
	}
}

func (ss *session) takeChunk(from peer.ID, e Report) error {
	p := e.Ckpt
	switch {
	case p == nil || p.Num == 0:
		return errors.New("no checkpoint number")
	case e.Rank < 0 || e.Rank >= ss.sub.Desc.Nodes:
		return fmt.Errorf("rank %d of a job of %d", e.Rank, ss.sub.Desc.Nodes)
	case ss.sub.Desc.Replicas > 1:
		return errors.New("a replicated job takes no checkpoints")
	case !ss.runsRank(from, e.Rank):
		return fmt.Errorf("host %s does not run rank %d", shortPeer(from), e.Rank)
	case p.Size < 0 || p.Size > MaxCheckpointFile:
		return fmt.Errorf("%d bytes, at most %d kept", p.Size, int64(MaxCheckpointFile))
	}
	if last, ok := ss.rec.LastComplete(); ok && p.Num <= last.Num {
		return fmt.Errorf("checkpoint %d is older than complete checkpoint %d", p.Num, last.Num)
	}
	key := ckKey(e.Rank, p.Num)
	in := ss.ckIn[key]
	if in == nil {
		dir := filepath.Join(ss.s.store.Dir(ss.id), "checkpoints")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		f, err := os.CreateTemp(dir, ".part-*")
		if err != nil {
			return err
		}
		in = &ckptIn{part: *p, from: from, f: f, sum: sha256.New(), at: time.Now()}
		ss.ckIn[key] = in
	}
	if in.from != from || !in.part.same(*p) {
		return fmt.Errorf("checkpoint %d: chunks from two hosts or of two files", p.Num)
	}
	if in.n+int64(len(e.Data)) > p.Size {
		return fmt.Errorf("checkpoint %d: more than the %d bytes announced", p.Num, p.Size)
	}
	if _, err := in.f.Write(e.Data); err != nil {
		return err
	}
	in.sum.Write(e.Data)
	in.n += int64(len(e.Data))
	if !e.EOF {
		return nil
	}
	in.part.Copies = p.Copies
	return ss.fileIn(e.Rank, in)
}

// fileIn checks a whole file, stores it and records it in the manifest.
func (ss *session) fileIn(rank int, in *ckptIn) error {
	defer ss.dropIn(rank, in.part.Num)
	got := hex.EncodeToString(in.sum.Sum(nil))
	if in.n != in.part.Size || got != in.part.Sum {
		return fmt.Errorf("checkpoint %d: %d bytes with sha256 %.12s, the rank announced %d bytes, %.12s",
			in.part.Num, in.n, got, in.part.Size, in.part.Sum)
	}
	if err := in.f.Sync(); err != nil {
		return err
	}
	want, err := blob.ParseHash(got)
	if err != nil {
		return fmt.Errorf("checkpoint %d: %w", in.part.Num, err)
	}
	ss.s.ckpt.hold(ss.id, want)
	h, n, err := ss.s.blobs.PutFile(in.f.Name())
	if err != nil {
		ss.s.ckpt.release(ss.id, want)
		return fmt.Errorf("checkpoint %d: keep: %w", in.part.Num, err)
	}
	if h.String() != got || n != in.n {
		return fmt.Errorf("checkpoint %d: the file changed while kept", in.part.Num)
	}
	ss.rec.Checkpoints = addFile(ss.rec.Checkpoints, in.part.Num, ss.rec.Attempts, ss.sub.Desc.Nodes,
		CheckpointFile{Rank: rank, Size: n, Hash: got, Copies: copiesOf(in, ss.s.h.ID())}, in.at, time.Now())
	if c, ok := ss.rec.LastComplete(); ok && c.Num == in.part.Num {
		ss.prune()
		log.Infow("checkpoint complete", "job", ss.id, "num", c.Num, "bytes", c.Bytes())
	}
	ss.save()
	return nil
}

// copiesOf lists where a file is: its host, the agents it says hold a
// copy (at most two), and this submitter.
func copiesOf(in *ckptIn, self peer.ID) []peer.ID {
	out := []peer.ID{in.from, self}
	for _, p := range in.part.Copies[:min(len(in.part.Copies), 2)] {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// runsRank reports whether host p runs rank in the current attempt.
func (ss *session) runsRank(p peer.ID, rank int) bool {
	h := ss.hosts[p]
	return h != nil && slices.ContainsFunc(h.plan.Procs, func(q Proc) bool { return q.Rank == rank })
}
