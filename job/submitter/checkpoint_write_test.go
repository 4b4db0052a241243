package submitter

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/internal/blob"
	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/lifecycle"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// writerFixture is a checkpoint writer over a real blob store, and the
// folder its files arrive in.
func writerFixture(t *testing.T) (*ckptWriter, *blob.Store, string, context.CancelFunc) {
	t.Helper()
	store, err := blob.New(blob.DefaultConfig(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return newCkptWriter(ctx, dir, store, newCkptBlobs(store), job.ID("job"), "submitter"), store, dir, cancel
}

// chunks cuts data into chunks of n bytes of rank's file num.
func chunks(from peer.ID, rank int, num uint64, data []byte, n int) []*ckptChunk {
	sum := sha256.Sum256(data)
	part := proto.CheckpointPart{Num: num, Size: int64(len(data)), Sum: hex.EncodeToString(sum[:])}
	var out []*ckptChunk
	for off := 0; ; off += n {
		end := min(off+n, len(data))
		out = append(out, &ckptChunk{from: from, rank: rank, part: part, data: data[off:end], eof: end == len(data)})
		if end == len(data) {
			return out
		}
	}
}

// leftFiles lists the files still in dir.
func leftFiles(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// TestCkptWriterKeeps: two ranks' files, their chunks interleaved, are
// kept whole in the blob store with their hashes; a file whose bytes do
// not match what its rank announced is not, and says why; nothing is left
// in the folder where they arrived.
func TestCkptWriterKeeps(t *testing.T) {
	w, store, dir, _ := writerFixture(t)
	ctx := context.Background()
	a := chunks("host-a", 0, 3, []byte(strings.Repeat("rank zero's state ", 1000)), 4096)
	b := chunks("host-b", 1, 3, []byte(strings.Repeat("rank one ", 2000)), 4096)
	bad := chunks("host-c", 2, 3, []byte("announced one thing"), 8)
	bad[len(bad)-1].data = []byte("xxx") // and sent another
	for i := 0; i < max(len(a), len(b)); i++ {
		for _, cs := range [][]*ckptChunk{a, b, bad} {
			if i < len(cs) {
				w.send(ctx, ckptOp{chunk: cs[i]})
			}
		}
	}
	got := map[int]lifecycle.KeptFile{}
	for _, r := range w.settle(ctx) {
		got[r.File.Rank] = r
	}
	for rank, cs := range map[int][]*ckptChunk{0: a, 1: b} {
		r, ok := got[rank]
		if !ok || r.Err != nil {
			t.Fatalf("rank %d: %+v, want its file kept", rank, r)
		}
		f := r.File
		h, err := blob.ParseHash(f.Hash)
		if err != nil || f.Hash != cs[0].part.Sum || f.Size != cs[0].part.Size || !store.Has(h) {
			t.Errorf("rank %d: kept %s (%d bytes, in store %v), want %s of %d bytes", rank, f.Hash, f.Size, store.Has(h), cs[0].part.Sum, cs[0].part.Size)
		}
		if want := []peer.ID{cs[0].from, "submitter"}; !slices.Equal(f.Copies, want) || r.Num != 3 {
			t.Errorf("rank %d: kept as checkpoint %d with copies %v, want 3 and %v", rank, r.Num, f.Copies, want)
		}
	}
	if r := got[2]; r.Err == nil || !strings.Contains(r.Err.Error(), "announced") {
		t.Errorf("rank 2's wrong bytes: %+v, want refused", r)
	}
	if left := leftFiles(t, dir); len(left) != 0 {
		t.Errorf("files left where they arrived: %v", left)
	}
}

// TestCkptWriterDrops: a file still arriving when the run ends is dropped
// by the settle, a file the session drops is forgotten (its later chunks
// start a new one), and the writer's end (the session's) removes what is
// left; chunks from another host for the same file are refused.
func TestCkptWriterDrops(t *testing.T) {
	w, _, dir, cancel := writerFixture(t)
	ctx := context.Background()
	half := chunks("host-a", 0, 4, []byte(strings.Repeat("s", 10000)), 4096)
	w.send(ctx, ckptOp{chunk: half[0]})
	if res := w.settle(ctx); len(res) != 0 {
		t.Fatalf("settle of a file half there: %+v, want nothing kept", res)
	}
	if left := leftFiles(t, dir); len(left) != 0 {
		t.Fatalf("a file half there was left after the settle: %v", left)
	}

	w.send(ctx, ckptOp{chunk: half[0]})
	w.send(ctx, ckptOp{drop: ckKey(0, 4)})
	for _, c := range half[1:] { // the rest alone no longer hashes right
		w.send(ctx, ckptOp{chunk: c})
	}
	res := w.settle(ctx)
	if len(res) != 1 || res[0].Err == nil {
		t.Fatalf("the rest of a dropped file: %+v, want refused", res)
	}

	other := chunks("host-b", 0, 4, half[0].data, 4096)
	w.send(ctx, ckptOp{chunk: half[0]})
	w.send(ctx, ckptOp{chunk: other[0]})
	res = w.settle(ctx)
	if len(res) != 1 || res[0].Err == nil || !strings.Contains(res[0].Err.Error(), "two hosts") {
		t.Fatalf("chunks of one file from two hosts: %+v", res)
	}

	w.send(ctx, ckptOp{chunk: half[0]})
	for deadline := time.Now().Add(time.Minute); len(leftFiles(t, dir)) == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the writer never created the file")
		}
	}
	cancel()
	<-w.done
	if left := leftFiles(t, dir); len(left) != 0 {
		t.Fatalf("files left after the writer ended: %v", left)
	}
}
