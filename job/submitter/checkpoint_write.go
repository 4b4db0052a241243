package submitter

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/internal/blob"
	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/lifecycle"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// The files of checkpoints arriving are written off the session's loop:
// creating a file, writing a chunk, and at a file's end its fsync and its
// copy into the blob store each took seconds under swap I/O (up to 9 s
// for one file's creation, BENCHMARKS.md), and the session's loop, which
// wrote them inline, held every other report of the job meanwhile. The
// session checks what it can from its own state (the rank, the host, the
// number against the last complete checkpoint), then hands the chunk to
// its ckptWriter, whose one goroutine owns the files arriving; the
// session takes what it finished (a file kept, or why one was not) at its
// next turn, and adds kept files to its record. The worker's window bounds
// the chunks on their way (ckptOps of them wait here, then the session
// waits). A file whose last chunk was taken is as good as kept: when the
// run ends (watch returns) the session settles the writer, which finishes
// such files and drops the ones still arriving, before it decides what
// the end means (a restart takes the last complete checkpoint).

// ckptOps bounds the operations waiting for the writer.
const ckptOps = 64

// ckptWriter writes one session's arriving checkpoint files.
type ckptWriter struct {
	ops   chan ckptOp
	ready chan struct{} // holds a token while results wait
	done  chan struct{} // closed when run has returned
	mu    sync.Mutex
	out   []lifecycle.KeptFile // finished, not yet taken by the session; guarded by mu

	// Owned by run.
	dir   string // where files arrive
	blobs *blob.Store
	holds *ckptBlobs
	id    job.ID
	self  peer.ID // this agent, which holds a copy of every file it keeps
	files map[string]*ckptIn
}

// ckptOp is one operation for the writer, in the session's order: a
// chunk to write, a file to forget, or a settle (closed once every
// operation before it is done and the files still arriving are dropped).
type ckptOp struct {
	chunk  *ckptChunk
	drop   string
	settle chan struct{}
}

// ckptIn is a checkpoint file arriving.
type ckptIn struct {
	part proto.CheckpointPart
	from peer.ID
	f    *os.File
	sum  hash.Hash
	n    int64
	at   time.Time // when its first chunk came
}

// ckptChunk is one chunk of a rank's file, checked by the session.
type ckptChunk struct {
	from peer.ID
	rank int
	part proto.CheckpointPart
	data []byte
	eof  bool
}

// newCkptWriter starts the writer of job id's checkpoint files, which
// ends with ctx (dropping what is still arriving).
func newCkptWriter(ctx context.Context, dir string, blobs *blob.Store, holds *ckptBlobs, id job.ID, self peer.ID) *ckptWriter {
	w := &ckptWriter{ops: make(chan ckptOp, ckptOps), ready: make(chan struct{}, 1), done: make(chan struct{}),
		dir: dir, blobs: blobs, holds: holds, id: id, self: self, files: map[string]*ckptIn{}}
	go w.run(ctx)
	return w
}

// send queues op, or reports false when ctx ended first.
func (w *ckptWriter) send(ctx context.Context, op ckptOp) bool {
	select {
	case w.ops <- op:
		return true
	case <-ctx.Done():
		return false
	}
}

// settle waits until every operation sent is done and the files still
// arriving are dropped, and returns what was finished; nothing when ctx
// ends first.
func (w *ckptWriter) settle(ctx context.Context) []lifecycle.KeptFile {
	done := make(chan struct{})
	if !w.send(ctx, ckptOp{settle: done}) {
		return nil
	}
	select {
	case <-done:
		return w.take()
	case <-ctx.Done():
		return nil
	}
}

// take returns the results waiting and forgets them.
func (w *ckptWriter) take() []lifecycle.KeptFile {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.out
	w.out = nil
	return out
}

func (w *ckptWriter) put(r lifecycle.KeptFile) {
	w.mu.Lock()
	w.out = append(w.out, r)
	w.mu.Unlock()
	select {
	case w.ready <- struct{}{}:
	default: // a token waits already
	}
}

func (w *ckptWriter) run(ctx context.Context) {
	defer close(w.done)
	defer w.dropAll()
	for {
		select {
		case op := <-w.ops:
			switch {
			case op.chunk != nil:
				w.write(op.chunk)
			case op.drop != "":
				w.drop(op.drop)
			case op.settle != nil:
				w.dropAll()
				close(op.settle)
			}
		case <-ctx.Done():
			return
		}
	}
}

// write takes one chunk; a file that cannot be written, or whose bytes do
// not hash to what its rank announced, is dropped with the reason.
func (w *ckptWriter) write(c *ckptChunk) {
	key := ckKey(c.rank, c.part.Num)
	if err := w.append(key, c); err != nil {
		w.drop(key)
		w.put(lifecycle.KeptFile{Num: c.part.Num, File: job.CheckpointFile{Rank: c.rank}, Err: err})
	}
}

func (w *ckptWriter) append(key string, c *ckptChunk) error {
	p := c.part
	in := w.files[key]
	if in == nil {
		if err := os.MkdirAll(w.dir, 0o700); err != nil {
			return err
		}
		f, err := os.CreateTemp(w.dir, ".part-*")
		if err != nil {
			return err
		}
		in = &ckptIn{part: p, from: c.from, f: f, sum: sha256.New(), at: time.Now()}
		w.files[key] = in
	}
	if in.from != c.from || !in.part.Same(p) {
		return fmt.Errorf("checkpoint %d: chunks from two hosts or of two files", p.Num)
	}
	if in.n+int64(len(c.data)) > p.Size {
		return fmt.Errorf("checkpoint %d: more than the %d bytes announced", p.Num, p.Size)
	}
	if _, err := in.f.Write(c.data); err != nil {
		return err
	}
	in.sum.Write(c.data)
	in.n += int64(len(c.data))
	if !c.eof {
		return nil
	}
	in.part.Copies = p.Copies
	defer w.drop(key)
	h, err := w.keep(in)
	if err != nil {
		return err
	}
	w.put(lifecycle.KeptFile{Num: p.Num, At: in.at,
		File: job.CheckpointFile{Rank: c.rank, Size: in.n, Hash: h, Copies: copiesOf(in, w.self), Quiet: p.Quiet}})
	return nil
}

// keep checks a whole file and puts it in the blob store.
func (w *ckptWriter) keep(in *ckptIn) (string, error) {
	got := hex.EncodeToString(in.sum.Sum(nil))
	if in.n != in.part.Size || got != in.part.Sum {
		return "", fmt.Errorf("checkpoint %d: %d bytes with sha256 %.12s, the rank announced %d bytes, %.12s",
			in.part.Num, in.n, got, in.part.Size, in.part.Sum)
	}
	if err := in.f.Sync(); err != nil {
		return "", err
	}
	want, err := blob.ParseHash(got)
	if err != nil {
		return "", fmt.Errorf("checkpoint %d: %w", in.part.Num, err)
	}
	w.holds.hold(w.id, want)
	h, n, err := w.blobs.PutFile(in.f.Name())
	if err != nil {
		w.holds.release(w.id, want)
		return "", fmt.Errorf("checkpoint %d: keep: %w", in.part.Num, err)
	}
	if h.String() != got || n != in.n {
		return "", fmt.Errorf("checkpoint %d: the file changed while kept", in.part.Num)
	}
	return got, nil
}

// drop forgets a file arriving.
func (w *ckptWriter) drop(key string) {
	if in := w.files[key]; in != nil {
		_ = in.f.Close()
		_ = os.Remove(in.f.Name())
		delete(w.files, key)
	}
}

func (w *ckptWriter) dropAll() {
	for key := range w.files {
		w.drop(key)
	}
}

// ckKey names a rank's file of a checkpoint among the files arriving.
func ckKey(rank int, num uint64) string { return fmt.Sprintf("%d/%d", rank, num) }

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
