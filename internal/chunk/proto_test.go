package chunk

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/internal/blob"
	"github.com/zorilla-p2p/zorilla/internal/wire"
)

func TestManifestOf(t *testing.T) {
	for _, size := range []int{0, 1, Size - 1, Size, Size + 1, 3 * Size} {
		b := make([]byte, size)
		_, _ = rand.Read(b)
		m, h, err := ManifestOf(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if h != blob.Sum(b) || m.Size != int64(size) || len(m.Chunks) != Count(int64(size)) {
			t.Fatalf("size %d: manifest of %d bytes, %d chunks", size, m.Size, len(m.Chunks))
		}
		if err := m.Check(); err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		for c, ch := range m.Chunks {
			if ch != blob.Sum(b[c*Size:int64(c)*Size+Len(int64(size), c)]) {
				t.Fatalf("size %d: chunk %d hash wrong", size, c)
			}
		}
	}
}

func TestManifestCheck(t *testing.T) {
	one := []blob.Hash{{}}
	for _, c := range []struct {
		m  Manifest
		ok bool
	}{
		{Manifest{}, true},
		{Manifest{Size: 1, Chunks: one}, true},
		{Manifest{Size: Size + 1, Chunks: one}, false},
		{Manifest{Size: 0, Chunks: one}, false},
		{Manifest{Size: -1}, false},
		{Manifest{Size: MaxChunks*Size + 1}, false},
	} {
		if err := c.m.Check(); (err == nil) != c.ok {
			t.Errorf("Check(size %d, %d chunks) = %v, want ok %v", c.m.Size, len(c.m.Chunks), err, c.ok)
		}
	}
}

func TestReadRequestRefuses(t *testing.T) {
	h := blob.Sum(nil).String()
	for _, in := range []string{
		`{"job":"j","key":"k","hash":"` + h + `","chunk":-2}`,
		`{"job":"j","key":"k","hash":"` + h + `","chunk":1024}`,
		`{"job":"j","key":"k","hash":"ABC","chunk":0}`,
		`{"job":"j","key":"` + strings.Repeat("k", MaxRequestSize) + `","hash":"` + h + `","chunk":0}`,
	} {
		var buf bytes.Buffer
		if err := wire.WriteFrame(&buf, []byte(in)); err != nil {
			t.Fatal(err)
		}
		if _, _, err := ReadRequest(bufio.NewReader(&buf)); err == nil {
			t.Errorf("ReadRequest(%.60s...) took it", in)
		}
	}
}

// The plan gives every chunk one seed among the hosts but the owner, and
// each host fetches its own seeds first.
func TestPlan(t *testing.T) {
	ps := []peer.ID{"o", "a", "b", "c"}
	for _, c := range []struct {
		self   peer.ID
		chunks int
		order  []int
	}{
		{"a", 5, []int{0, 3, 1, 2, 4}},
		{"b", 5, []int{1, 4, 2, 3, 0}},
		{"c", 5, []int{2, 3, 4, 0, 1}},
		{"c", 0, nil},
		{"x", 2, []int{0, 1}}, // not a host: no seeds
	} {
		pl := newPlan(Fetch{Owner: "o", Hosts: ps}, c.chunks, c.self)
		if got := pl.order(); !equal(got, c.order) {
			t.Errorf("%s of %d chunks: order %v, want %v", c.self, c.chunks, got, c.order)
		}
	}
	pl := newPlan(Fetch{Owner: "o", Hosts: ps}, 3, "b")
	if s, _ := pl.seeder(0); s != "a" {
		t.Fatalf("seed of chunk 0 is %s, want a", s)
	}
	pl.fail("a")
	if s, _ := pl.seeder(0); s != "b" {
		t.Fatalf("seed of chunk 0 once a failed is %s, want b", s)
	}
	for _, q := range pl.candidates(0, 0, "b") {
		if q == "a" || q == "b" || q == "o" {
			t.Fatalf("candidate %s: failed, self or owner", q)
		}
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func FuzzReadRequest(f *testing.F) {
	f.Add([]byte(`{"job":"j","key":"k","hash":"` + blob.Sum(nil).String() + `","chunk":3}`))
	f.Add([]byte(`{"chunk":-1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var buf bytes.Buffer
		_ = wire.WriteFrame(&buf, b)
		q, _, err := ReadRequest(bufio.NewReader(&buf))
		if err == nil && (q.Chunk < ManifestChunk || q.Chunk >= MaxChunks) {
			t.Fatalf("took chunk %d", q.Chunk)
		}
	})
}

func FuzzReadReply(f *testing.F) {
	f.Add([]byte(`{"size":1048576}`))
	f.Add([]byte(`{"manifest":{"size":1,"chunks":["` + blob.Sum(nil).String() + `"]}}`))
	f.Add([]byte(`{"missing":true}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var buf bytes.Buffer
		_ = wire.WriteFrame(&buf, b)
		p, err := ReadReply(bufio.NewReader(&buf))
		if err != nil {
			return
		}
		if p.Size < 0 || p.Size > Size {
			t.Fatalf("took size %d", p.Size)
		}
		if p.Manifest != nil && p.Manifest.Check() != nil {
			t.Fatalf("took a bad manifest")
		}
	})
}
