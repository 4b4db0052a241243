package blob

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Errors of a Store. Callers test them with errors.Is.
var (
	ErrNotFound = errors.New("blob: not found")
	ErrTooLarge = errors.New("blob: too large")
	ErrCorrupt  = errors.New("blob: content does not match its hash")
	ErrFull     = errors.New("blob: store full")
)

// tmpPrefix starts the name of every temporary file of a Store.
const tmpPrefix = ".put-"

// Config configures a Store.
type Config struct {
	// Dir is the folder the Store owns. Required.
	Dir string
	// MaxSize bounds one blob, in bytes.
	MaxSize int64
	// MaxTotal bounds the bytes of all blobs together; 0 means no bound.
	MaxTotal int64
}

// DefaultConfig returns the defaults for a Store in dir.
func DefaultConfig(dir string) Config {
	return Config{
		Dir: dir,
		// 1 GiB: a job's program or one input file. Fifty times the 20 MB
		// program of the benchmarks, yet one file cannot fill a disk.
		MaxSize: 1 << 30,
		// 8 GiB: room for the programs and inputs of several jobs at once
		// on an ordinary machine; the worker removes a job's blobs after it.
		MaxTotal: 8 << 30,
	}
}

func (c Config) validate() error {
	switch {
	case c.Dir == "":
		return errors.New("blob: config: Dir is empty")
	case c.MaxSize <= 0:
		return fmt.Errorf("blob: config: MaxSize %d must be positive", c.MaxSize)
	case c.MaxTotal < 0:
		return fmt.Errorf("blob: config: MaxTotal %d must not be negative", c.MaxTotal)
	case c.MaxTotal > 0 && c.MaxTotal < c.MaxSize:
		return fmt.Errorf("blob: config: MaxTotal %d is below MaxSize %d", c.MaxTotal, c.MaxSize)
	}
	return nil
}

// Store is a content-addressed store over a folder. Its methods are safe for
// concurrent use.
type Store struct {
	dir      string
	maxSize  int64
	maxTotal int64

	mu   sync.Mutex // guards used and pins, and orders check-then-rename of new blobs
	used int64      // bytes of the blobs in dir
	// pins counts, per blob, the users that need it kept (Pin): the
	// submitter for the files of the jobs it runs, while the worker of
	// the same agent removes what it fetched once its jobs end.
	pins map[Hash]int
}

// New opens (creating it if needed) the Store in cfg.Dir. It removes
// temporary files left by an earlier run and counts the bytes held.
func New(cfg Config) (*Store, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("blob: create %s: %w", cfg.Dir, err)
	}
	s := &Store{dir: cfg.Dir, maxSize: cfg.MaxSize, maxTotal: cfg.MaxTotal, pins: map[Hash]int{}}
	used, err := s.scan()
	if err != nil {
		return nil, err
	}
	s.used = used
	return s, nil
}

// scan removes leftover temporary files and sums the sizes of the blobs.
func (s *Store) scan() (int64, error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return 0, fmt.Errorf("blob: read %s: %w", s.dir, err)
	}
	var used int64
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tmpPrefix) {
			if err := os.Remove(filepath.Join(s.dir, e.Name())); err != nil {
				return 0, fmt.Errorf("blob: remove leftover %s: %w", e.Name(), err)
			}
			continue
		}
		if _, err := ParseHash(e.Name()); err != nil || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return 0, fmt.Errorf("blob: stat %s: %w", e.Name(), err)
		}
		used += info.Size()
	}
	return used, nil
}

// Used returns the bytes of all blobs in the Store.
func (s *Store) Used() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.used
}

// Path is the file of blob h. It exists only if Has(h).
func (s *Store) Path(h Hash) string { return filepath.Join(s.dir, h.String()) }

// Has reports whether the Store holds blob h. It does not read the content;
// Verify does.
func (s *Store) Has(h Hash) bool {
	_, ok := s.size(h)
	return ok
}

func (s *Store) size(h Hash) (int64, bool) {
	info, err := os.Lstat(s.Path(h))
	if err != nil || !info.Mode().IsRegular() {
		return 0, false
	}
	return info.Size(), true
}

// Put stores what r yields, up to maxSize bytes (0 or less, or more than
// Config.MaxSize, means Config.MaxSize), and returns its hash and size. A
// reader that yields more than that is refused with ErrTooLarge and nothing
// is stored. Putting content the Store already holds is not an error.
func (s *Store) Put(r io.Reader, maxSize int64) (Hash, int64, error) {
	tmp, h, n, err := s.write(r, s.limit(maxSize))
	if err != nil {
		return Hash{}, 0, err
	}
	if err := s.commit(tmp, h, n); err != nil {
		return Hash{}, 0, err
	}
	return h, n, nil
}

// PutHash stores what r yields only if its sha256 is want; otherwise it
// returns ErrCorrupt and stores nothing. If the Store already holds want it
// returns its size at once, without reading r. Bounds are as for Put.
func (s *Store) PutHash(r io.Reader, want Hash, maxSize int64) (int64, error) {
	if size, ok := s.size(want); ok {
		return size, nil
	}
	tmp, h, n, err := s.write(r, s.limit(maxSize))
	if err != nil {
		return 0, err
	}
	if h != want {
		_ = os.Remove(tmp)
		return 0, fmt.Errorf("%w: got %s, want %s", ErrCorrupt, h, want)
	}
	if err := s.commit(tmp, h, n); err != nil {
		return 0, err
	}
	return n, nil
}

// PutFile stores the content of the file at path, as Put with no maxSize.
func (s *Store) PutFile(path string) (Hash, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return Hash{}, 0, fmt.Errorf("blob: put %s: %w", path, err)
	}
	defer f.Close()
	h, n, err := s.Put(f, 0)
	if err != nil {
		return Hash{}, 0, fmt.Errorf("blob: put %s: %w", path, err)
	}
	return h, n, nil
}

func (s *Store) limit(maxSize int64) int64 {
	if maxSize <= 0 || maxSize > s.maxSize {
		return s.maxSize
	}
	return maxSize
}

// write copies at most limit bytes of r into a new read-only temporary file,
// hashing them on the way, and returns its path, hash and size.
func (s *Store) write(r io.Reader, limit int64) (tmp string, h Hash, n int64, err error) {
	f, err := os.CreateTemp(s.dir, tmpPrefix+"*")
	if err != nil {
		return "", Hash{}, 0, fmt.Errorf("blob: create temporary file: %w", err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	sum := sha256.New()
	n, err = io.Copy(io.MultiWriter(f, sum), io.LimitReader(r, limit+1))
	if err != nil {
		return "", Hash{}, 0, fmt.Errorf("blob: write: %w", err)
	}
	if n > limit {
		return "", Hash{}, 0, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)
	}
	if err = f.Sync(); err != nil {
		return "", Hash{}, 0, fmt.Errorf("blob: sync: %w", err)
	}
	if err = f.Chmod(0o444); err != nil {
		return "", Hash{}, 0, fmt.Errorf("blob: chmod: %w", err)
	}
	if err = f.Close(); err != nil {
		return "", Hash{}, 0, fmt.Errorf("blob: close: %w", err)
	}
	copy(h[:], sum.Sum(nil))
	return f.Name(), h, n, nil
}

// commit renames the temporary file tmp to blob h of n bytes, unless the
// Store already holds h or has no room for it.
func (s *Store) commit(tmp string, h Hash, n int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.size(h); ok {
		_ = os.Remove(tmp)
		return nil
	}
	if s.maxTotal > 0 && s.used+n > s.maxTotal {
		_ = os.Remove(tmp)
		return fmt.Errorf("%w: %d bytes held, %d more would pass %d", ErrFull, s.used, n, s.maxTotal)
	}
	if err := os.Rename(tmp, s.Path(h)); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("blob: store %s: %w", h, err)
	}
	s.used += n
	return nil
}

// Remove deletes blob h, unless it is pinned. Removing a blob the Store
// does not hold (or a pinned one) is not an error.
func (s *Store) Remove(h Hash) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pins[h] > 0 {
		return nil // someone still needs it; the last Unpin does not remove it either
	}
	size, ok := s.size(h)
	if !ok {
		return nil
	}
	if err := os.Remove(s.Path(h)); err != nil {
		return fmt.Errorf("blob: remove %s: %w", h, err)
	}
	s.used -= size
	return nil
}

// Pin keeps blob h (present or to come) in the store until as many Unpin
// calls: Remove leaves a pinned blob where it is.
func (s *Store) Pin(h Hash) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pins[h]++
}

// Unpin ends one Pin of h.
func (s *Store) Unpin(h Hash) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pins[h] <= 1 {
		delete(s.pins, h)
		return
	}
	s.pins[h]--
}
