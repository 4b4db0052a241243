package submitter

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/internal/blob"
	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// TestResumable: only a stopped job whose files and complete checkpoint
// are still in the blob store can be resumed, each refusal saying why.
func TestResumable(t *testing.T) {
	blobs, err := blob.New(blob.DefaultConfig(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	put := func(s string) string {
		h, _, err := blobs.Put(strings.NewReader(s), 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		return h.String()
	}
	prog := proto.FileRef{Name: "p", Hash: put("program"), Size: 7}
	missing := strings.Repeat("ab", 32)
	base := job.NewRecord(proto.NewJobID(), "", job.NewDescription("p", nil, 2), time.Unix(1000, 0))
	base.State, base.Program = job.Stopped, &prog
	complete := job.Checkpoint{Num: 3, Complete: true, Files: []job.CheckpointFile{{Rank: 0, Hash: put("r0")}, {Rank: 1, Hash: put("r1")}}}
	for _, tc := range []struct {
		name string
		edit func(r *job.Record)
		want string // "" resumable
	}{
		{"stopped", func(r *job.Record) { r.Checkpoints = []job.Checkpoint{complete} }, ""},
		{"newer incomplete kept", func(r *job.Record) {
			r.Checkpoints = []job.Checkpoint{complete, {Num: 4, Files: []job.CheckpointFile{{Rank: 0, Hash: missing}}}}
		}, ""},
		{"done", func(r *job.Record) { r.State, r.Checkpoints = job.Done, []job.Checkpoint{complete} }, "is done"},
		{"running", func(r *job.Record) { r.State, r.Checkpoints = job.Running, []job.Checkpoint{complete} }, "is running"},
		{"no checkpoint", func(r *job.Record) {}, "no complete checkpoint"},
		{"only incomplete", func(r *job.Record) { r.Checkpoints = []job.Checkpoint{{Num: 1, Files: complete.Files[:1]}} }, "no complete checkpoint"},
		{"file gone", func(r *job.Record) {
			c := complete
			c.Files = []job.CheckpointFile{c.Files[0], {Rank: 1, Hash: missing}}
			r.Checkpoints = []job.Checkpoint{c}
		}, "rank 1's file of checkpoint 3"},
		{"program gone", func(r *job.Record) {
			r.Checkpoints = []job.Checkpoint{complete}
			r.Program = &proto.FileRef{Name: "p", Hash: missing}
		}, "its file p"},
		{"no program", func(r *job.Record) { r.Checkpoints, r.Program = []job.Checkpoint{complete}, nil }, "lost its program"},
	} {
		r := base
		tc.edit(&r)
		c, err := resumable(r, blobs)
		switch {
		case tc.want == "" && (err != nil || c.Num != 3):
			t.Errorf("%s: %v, checkpoint %d, want resumable from 3", tc.name, err, c.Num)
		case tc.want != "" && (!errors.Is(err, job.ErrNotResumable) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want job.ErrNotResumable saying %q", tc.name, err, tc.want)
		}
	}
}
