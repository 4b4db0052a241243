package blob

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func newStore(t *testing.T, mut func(*Config)) *Store {
	t.Helper()
	cfg := DefaultConfig(filepath.Join(t.TempDir(), "blobs"))
	if mut != nil {
		mut(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func readAll(t *testing.T, s *Store, h Hash) []byte {
	t.Helper()
	rc, size, err := s.Open(h)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(b)) != size {
		t.Fatalf("Open size %d, read %d", size, len(b))
	}
	return b
}

// corrupt rewrites blob h with other content, as a disk error or a careless
// user would.
func corrupt(t *testing.T, s *Store, h Hash) {
	t.Helper()
	if err := os.Chmod(s.Path(h), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.Path(h), []byte("something else"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestConfigValidate(t *testing.T) {
	for name, mut := range map[string]func(*Config){
		"no dir":        func(c *Config) { c.Dir = "" },
		"zero max size": func(c *Config) { c.MaxSize = 0 },
		"negative total": func(c *Config) {
			c.MaxTotal = -1
		},
		"total below size": func(c *Config) { c.MaxTotal = c.MaxSize - 1 },
	} {
		cfg := DefaultConfig(t.TempDir())
		mut(&cfg)
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: New accepted %+v", name, cfg)
		}
	}
}

func TestPutOpenRoundTrip(t *testing.T) {
	s := newStore(t, nil)
	content := bytes.Repeat([]byte("zorilla "), 100_000)
	h, n, err := s.Put(bytes.NewReader(content), 0)
	if err != nil {
		t.Fatal(err)
	}
	if h != Sum(content) || n != int64(len(content)) {
		t.Fatalf("Put = %s %d, want %s %d", h, n, Sum(content), len(content))
	}
	if !s.Has(h) || s.Used() != n {
		t.Fatalf("Has %v Used %d", s.Has(h), s.Used())
	}
	if got := readAll(t, s, h); !bytes.Equal(got, content) {
		t.Fatal("content read back differs")
	}
	info, err := os.Stat(s.Path(h))
	if err != nil || info.Mode().Perm() != 0o444 || filepath.Base(s.Path(h)) != h.String() {
		t.Fatalf("blob file %v %v", info, err)
	}
	// The same content again is stored once.
	if h2, _, err := s.Put(bytes.NewReader(content), 0); err != nil || h2 != h || s.Used() != n {
		t.Fatalf("second Put = %s %v, used %d", h2, err, s.Used())
	}
}

func TestPutTooLarge(t *testing.T) {
	s := newStore(t, func(c *Config) { c.MaxSize = 1000; c.MaxTotal = 0 })
	for _, tc := range []struct {
		size, max int64
		ok        bool
	}{
		{1000, 0, true}, {1001, 0, false}, {1001, 5000, false},
		{10, 10, true}, {11, 10, false}, {0, 0, true},
	} {
		_, _, err := s.Put(bytes.NewReader(make([]byte, tc.size)), tc.max)
		if tc.ok != (err == nil) || (err != nil && !errors.Is(err, ErrTooLarge)) {
			t.Errorf("Put %d bytes max %d: %v, want ok=%v", tc.size, tc.max, err, tc.ok)
		}
	}
	assertNoTemp(t, s)
}

func TestStoreFull(t *testing.T) {
	s := newStore(t, func(c *Config) { c.MaxSize = 100; c.MaxTotal = 250 })
	for i := range 2 {
		if _, _, err := s.Put(bytes.NewReader(bytes.Repeat([]byte{byte(i)}, 100)), 0); err != nil {
			t.Fatal(err)
		}
	}
	h3 := Sum(bytes.Repeat([]byte{2}, 100))
	if _, _, err := s.Put(bytes.NewReader(bytes.Repeat([]byte{2}, 100)), 0); !errors.Is(err, ErrFull) {
		t.Fatalf("third Put: %v, want ErrFull", err)
	}
	if s.Has(h3) || s.Used() != 200 {
		t.Fatalf("after refused Put: has %v used %d", s.Has(h3), s.Used())
	}
	if err := s.Remove(Sum(bytes.Repeat([]byte{0}, 100))); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Put(bytes.NewReader(bytes.Repeat([]byte{2}, 100)), 0); err != nil {
		t.Fatalf("Put after Remove: %v", err)
	}
	assertNoTemp(t, s)
}

func TestPutHash(t *testing.T) {
	s := newStore(t, nil)
	good := []byte("the program")
	want := Sum(good)
	if _, err := s.PutHash(strings.NewReader("a tampered program"), want, 0); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("PutHash of other content: %v, want ErrCorrupt", err)
	}
	if s.Has(want) || s.Used() != 0 {
		t.Fatal("refused content was stored")
	}
	if n, err := s.PutHash(bytes.NewReader(good), want, 0); err != nil || n != int64(len(good)) {
		t.Fatalf("PutHash: %d %v", n, err)
	}
	// Already held: the reader is not touched.
	if n, err := s.PutHash(failReader{}, want, 0); err != nil || n != int64(len(good)) {
		t.Fatalf("PutHash of held blob: %d %v", n, err)
	}
	assertNoTemp(t, s)
}

type failReader struct{}

func (failReader) Read([]byte) (int, error) { return 0, errors.New("must not be read") }

func TestPutReaderError(t *testing.T) {
	s := newStore(t, nil)
	r := io.MultiReader(strings.NewReader("half"), failReader{})
	if _, _, err := s.Put(r, 0); err == nil {
		t.Fatal("Put of a failing reader succeeded")
	}
	assertNoTemp(t, s)
}

func TestPutFile(t *testing.T) {
	s := newStore(t, nil)
	path := filepath.Join(t.TempDir(), "input.dat")
	if err := os.WriteFile(path, []byte("abc"), 0o600); err != nil {
		t.Fatal(err)
	}
	h, n, err := s.PutFile(path)
	if err != nil || h.String() != abcHex || n != 3 {
		t.Fatalf("PutFile = %s %d %v", h, n, err)
	}
	if _, _, err := s.PutFile(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("PutFile of missing file: %v", err)
	}
}

func TestOpenMissing(t *testing.T) {
	s := newStore(t, nil)
	if _, _, err := s.Open(Sum([]byte("x"))); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Open of missing blob: %v, want ErrNotFound", err)
	}
	if err := s.Verify(Sum([]byte("x"))); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Verify of missing blob: %v", err)
	}
	if err := s.Remove(Sum([]byte("x"))); err != nil {
		t.Fatalf("Remove of missing blob: %v", err)
	}
}

func TestCorruptBlobRefused(t *testing.T) {
	s := newStore(t, nil)
	h, _, err := s.Put(strings.NewReader("original"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Verify(h); err != nil {
		t.Fatalf("Verify of a good blob: %v", err)
	}
	corrupt(t, s, h)
	rc, _, err := s.Open(h)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(rc); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("reading a corrupt blob: %v, want ErrCorrupt", err)
	}
	rc.Close()
	if err := s.Verify(h); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Verify of a corrupt blob: %v", err)
	}
	if s.Has(h) {
		t.Fatal("corrupt blob still held after Verify")
	}
}

func TestCopyTo(t *testing.T) {
	s := newStore(t, nil)
	h, _, err := s.Put(strings.NewReader("#!/bin/sh\necho hi\n"), 0)
	if err != nil {
		t.Fatal(err)
	}
	jobDir := t.TempDir()
	dst := filepath.Join(jobDir, "prog")
	if err := s.CopyTo(h, dst, 0o755); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(dst)
	if err != nil || info.Mode().Perm() != 0o755 {
		t.Fatalf("staged program: %v %v", info, err)
	}
	if b, _ := os.ReadFile(dst); string(b) != "#!/bin/sh\necho hi\n" {
		t.Fatalf("staged content %q", b)
	}

	corrupt(t, s, h)
	dst2 := filepath.Join(jobDir, "prog2")
	if err := s.CopyTo(h, dst2, 0o755); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("CopyTo of a corrupt blob: %v", err)
	}
	if _, err := os.Stat(dst2); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("corrupt copy left at %s: %v", dst2, err)
	}
	if s.Has(h) {
		t.Fatal("corrupt blob still held after CopyTo")
	}
	entries, _ := os.ReadDir(jobDir)
	if len(entries) != 1 {
		t.Fatalf("job folder holds %d files, want only prog", len(entries))
	}
}

func TestReopenCountsAndCleans(t *testing.T) {
	s := newStore(t, nil)
	if _, _, err := s.Put(strings.NewReader("kept"), 0); err != nil {
		t.Fatal(err)
	}
	leftover := filepath.Join(s.dir, tmpPrefix+"crashed")
	if err := os.WriteFile(leftover, []byte("partial"), 0o600); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(s.dir, "README")
	if err := os.WriteFile(other, []byte("not a blob"), 0o600); err != nil {
		t.Fatal(err)
	}
	s2, err := New(DefaultConfig(s.dir))
	if err != nil {
		t.Fatal(err)
	}
	if s2.Used() != 4 {
		t.Fatalf("reopened store counts %d bytes, want 4", s2.Used())
	}
	if _, err := os.Stat(leftover); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("leftover temporary file not removed")
	}
}

func TestConcurrentPutsOfSameContent(t *testing.T) {
	s := newStore(t, nil)
	content := bytes.Repeat([]byte("same"), 10_000)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			_, _, err := s.Put(bytes.NewReader(content), 0)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if s.Used() != int64(len(content)) {
		t.Fatalf("used %d after concurrent puts, want %d", s.Used(), len(content))
	}
	assertNoTemp(t, s)
}

func assertNoTemp(t *testing.T, s *Store) {
	t.Helper()
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tmpPrefix) {
			t.Fatalf("temporary file %s left behind", e.Name())
		}
	}
}

func BenchmarkPut20MB(b *testing.B) {
	cfg := DefaultConfig(b.TempDir())
	s, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	content := make([]byte, 20<<20)
	for i := range content {
		content[i] = byte(i * 7)
	}
	b.SetBytes(int64(len(content)))
	for i := 0; b.Loop(); i++ {
		content[0] = byte(i) // a new blob each time
		content[1] = byte(i >> 8)
		h, _, err := s.Put(bytes.NewReader(content), 0)
		if err != nil {
			b.Fatal(err)
		}
		_ = s.Remove(h)
	}
}

// TestPinnedBlobsStay: a pinned blob survives Remove until its last pin
// ends (the submitter's waiting job keeps its program while the worker of
// the same agent removes what it fetched for a job that ended).
func TestPinnedBlobsStay(t *testing.T) {
	s := newStore(t, nil)
	h, _, err := s.Put(strings.NewReader("program"), 0)
	if err != nil {
		t.Fatal(err)
	}
	s.Pin(h)
	s.Pin(h)
	for i := range 2 {
		if err := s.Remove(h); err != nil || !s.Has(h) {
			t.Fatalf("pinned %d times: removed (%v)", 2-i, err)
		}
		s.Unpin(h)
	}
	if err := s.Remove(h); err != nil || s.Has(h) {
		t.Fatalf("unpinned: still there (%v)", err)
	}
	s.Unpin(h) // more unpins than pins change nothing
	if h2, _, _ := s.Put(strings.NewReader("program"), 0); s.Remove(h2) != nil || s.Has(h2) {
		t.Fatal("a blob put again after too many unpins is pinned")
	}
}
