package chunk

import (
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/zorilla-p2p/zorilla/internal/blob"
)

// partial is a file being fetched: a temporary file of its full size and
// which of its chunks arrived and matched the manifest.
type partial struct {
	m Manifest
	f *os.File

	mu   sync.Mutex // guards have
	have []bool
}

func newPartial(dir string, m Manifest) (*partial, error) {
	f, err := os.CreateTemp(dir, ".chunks-*")
	if err != nil {
		return nil, fmt.Errorf("chunk: temporary file: %w", err)
	}
	if err := f.Truncate(m.Size); err != nil {
		_ = f.Close()
		_ = os.Remove(f.Name())
		return nil, fmt.Errorf("chunk: temporary file: %w", err)
	}
	return &partial{m: m, f: f, have: make([]bool, len(m.Chunks))}, nil
}

// put writes chunk c if b matches the manifest, and says whether it did.
func (p *partial) put(c int, b []byte) (bool, error) {
	if int64(len(b)) != Len(p.m.Size, c) || blob.Sum(b) != p.m.Chunks[c] {
		return false, nil
	}
	if _, err := p.f.WriteAt(b, int64(c)*Size); err != nil {
		return false, fmt.Errorf("chunk: write chunk %d: %w", c, err)
	}
	p.mu.Lock()
	p.have[c] = true
	p.mu.Unlock()
	return true, nil
}

func (p *partial) has(c int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.have[c]
}

// read returns chunk c if it arrived.
func (p *partial) read(c int) ([]byte, bool, error) {
	if c >= len(p.m.Chunks) {
		return nil, false, fmt.Errorf("chunk %d past the file's %d chunks", c, len(p.m.Chunks))
	}
	if !p.has(c) {
		return nil, false, nil
	}
	b := make([]byte, Len(p.m.Size, c))
	if _, err := p.f.ReadAt(b, int64(c)*Size); err != nil {
		return nil, false, fmt.Errorf("file not readable")
	}
	return b, true, nil
}

// reader reads the whole file.
func (p *partial) reader() io.Reader { return io.NewSectionReader(p.f, 0, p.m.Size) }

// remove closes and deletes the temporary file.
func (p *partial) remove() {
	_ = p.f.Close()
	_ = os.Remove(p.f.Name())
}
