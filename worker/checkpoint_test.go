package worker

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/internal/blob"
	"github.com/zorilla-p2p/zorilla/internal/wire"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// memStream is one request's stream: what the client wrote, and what the
// handler answers.
type memStream struct {
	in  io.Reader
	out bytes.Buffer
}

func (m *memStream) Read(p []byte) (int, error)       { return m.in.Read(p) }
func (m *memStream) Write(p []byte) (int, error)      { return m.out.Write(p) }
func (m *memStream) Close() error                     { return nil }
func (m *memStream) Reset() error                     { return nil }
func (m *memStream) SetDeadline(time.Time) error      { return nil }
func (m *memStream) SetReadDeadline(time.Time) error  { return nil }
func (m *memStream) SetWriteDeadline(time.Time) error { return nil }

// ask sends one CopyRequest (and body) to s and returns the reply and what
// followed it.
func ask(t *testing.T, s *Service, req proto.CopyRequest, body []byte) (proto.FetchReply, []byte) {
	t.Helper()
	var in bytes.Buffer
	if err := wire.WriteJSON(&in, req); err != nil {
		t.Fatal(err)
	}
	in.Write(body)
	st := &memStream{in: &in}
	s.handleCopy(t.Context(), "", st)
	br := bufio.NewReader(&st.out)
	var rep proto.FetchReply
	if err := wire.ReadJSON(br, proto.MaxReplySize, &rep); err != nil {
		t.Fatalf("%s: no reply: %v", req.Op, err)
	}
	rest, _ := io.ReadAll(br)
	return rep, rest
}

// TestCopyStore: a copy is kept only for a job running here, with its key,
// within the bounds, and only when its bytes hash right; it is given back
// and dropped only with the key; it expires.
func TestCopyStore(t *testing.T) {
	cfg := DefaultServiceConfig()
	cfg.JobsDir, cfg.MaxStage = t.TempDir(), 100
	s := &Service{cfg: cfg, jobs: map[proto.JobID]*running{"j1": {c: proto.Commit{Key: "k1"}}}}
	data := []byte("a rank's checkpoint")
	h := blob.Hash(sha256.Sum256(data))
	put := proto.CopyRequest{Op: proto.CopyPut, Job: "j1", Key: "k1", Hash: h.String(), Size: int64(len(data))}
	refused := func(what string, req proto.CopyRequest, body []byte, want string) {
		t.Helper()
		if rep, _ := ask(t, s, req, body); !strings.Contains(rep.Error, want) {
			t.Errorf("%s: reply %+v, want an error saying %q", what, rep, want)
		}
	}
	other := put
	other.Job = "j2"
	refused("another job", other, data, "no such job")
	other = put
	other.Key = "k2"
	refused("wrong key", other, data, "no such job")
	refused("bytes that do not hash right", put, []byte("a rank's checkpoinT"), "do not hash")
	big := put
	big.Size = 101
	refused("over the bound", big, bytes.Repeat([]byte{1}, 101), "at most 100")
	if _, err := os.Stat(s.copyPath("j1", h)); err == nil {
		t.Fatal("a refused copy was kept")
	}
	if rep, _ := ask(t, s, put, data); rep.Error != "" || rep.Size != int64(len(data)) {
		t.Fatalf("put: %+v", rep)
	}
	get := proto.CopyRequest{Op: proto.CopyGet, Job: "j1", Key: "k1", Hash: h.String()}
	if rep, body := ask(t, s, get, nil); rep.Error != "" || !bytes.Equal(body, data) {
		t.Fatalf("get: %+v %q", rep, body)
	}
	other = get
	other.Key = "k2"
	refused("get with a wrong key", other, nil, "no such copy")
	drop := proto.CopyRequest{Op: proto.CopyDrop, Job: "j1", Key: "k2"}
	ask(t, s, drop, nil)
	if _, err := os.Stat(s.copyPath("j1", h)); err != nil {
		t.Fatalf("a drop with a wrong key removed the copy: %v", err)
	}
	drop.Key = "k1"
	ask(t, s, drop, nil)
	if es, _ := os.ReadDir(cfg.JobsDir); len(es) != 0 {
		t.Fatalf("after the drop the jobs folder holds %v", es)
	}
	ask(t, s, put, data)
	s.expireCopies(time.Now().Add(proto.CopyTTL + time.Minute))
	if es, _ := os.ReadDir(cfg.JobsDir); len(es) != 0 {
		t.Fatalf("after expiry the jobs folder holds %v", es)
	}
	refused("unknown operation", proto.CopyRequest{Op: "steal", Job: "j1", Key: "k1"}, nil, "unknown operation")
}

// old lists checkpoint num's files of ranks 0..n-1.
func old(n int, num uint64) []proto.Restore {
	var out []proto.Restore
	for r := range n {
		out = append(out, proto.Restore{Rank: r, Num: num, File: proto.FileRef{Name: proto.RestoreName(num, r)}})
	}
	return out
}

// TestCheckRestore: checkpoint files come one per rank, of plain names,
// for an unreplicated job; a restart at another size brings every old
// rank's file of one checkpoint.
func TestCheckRestore(t *testing.T) {
	ok := proto.Restore{Rank: 1, Num: 3, File: proto.FileRef{Name: "ckpt-3.rank-1"}}
	mine := []proto.Proc{{Rank: 1}}
	for _, tc := range []struct {
		name string
		c    proto.Commit
		good bool
	}{
		{"none", proto.Commit{N: 2, R: 1}, true},
		{"one", proto.Commit{N: 2, R: 1, Procs: mine, Restore: []proto.Restore{ok}}, true},
		{"replicated", proto.Commit{N: 2, R: 2, Procs: mine, Restore: []proto.Restore{ok}}, false},
		{"twice", proto.Commit{N: 2, R: 1, Procs: mine, Restore: []proto.Restore{ok, ok}}, false},
		{"another host's rank", proto.Commit{N: 2, R: 1, Procs: []proto.Proc{{Rank: 0}}, Restore: []proto.Restore{ok}}, false},
		{"number 0", proto.Commit{N: 2, R: 1, Procs: mine, Restore: []proto.Restore{{Rank: 1, File: ok.File}}}, false},
		{"path", proto.Commit{N: 2, R: 1, Procs: mine, Restore: []proto.Restore{{Rank: 1, Num: 3, File: proto.FileRef{Name: "../x"}}}}, false},
		{"negative interval", proto.Commit{N: 2, R: 1, CheckpointEvery: -1}, false},
		{"resized: every old rank", proto.Commit{N: 2, R: 1, Procs: mine, RestoreSize: 3, Restore: old(3, 3)}, true},
		{"resized: one missing", proto.Commit{N: 2, R: 1, Procs: mine, RestoreSize: 3, Restore: old(3, 3)[:2]}, false},
		{"resized: a rank past the old size", proto.Commit{N: 2, R: 1, Procs: mine, RestoreSize: 2, Restore: old(3, 3)[1:]}, false},
		{"resized: two checkpoints", proto.Commit{N: 2, R: 1, Procs: mine, RestoreSize: 2, Restore: append(old(1, 3), old(2, 4)[1])}, false},
		{"resized: negative size", proto.Commit{N: 2, R: 1, Procs: mine, RestoreSize: -1}, false},
	} {
		if err := checkRestore(tc.c); (err == nil) != tc.good {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}
