package blob

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Open returns a reader of blob h and its size. The reader checks the
// content as it goes: at the end it returns ErrCorrupt instead of io.EOF if
// the content does not match h, so a consumer that reads to the end never
// takes a corrupt blob for a good one.
func (s *Store) Open(h Hash) (io.ReadCloser, int64, error) {
	f, err := os.Open(s.Path(h))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, fmt.Errorf("%w: %s", ErrNotFound, h)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("blob: open %s: %w", h, err)
	}
	info, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, 0, fmt.Errorf("blob: stat %s: %w", h, err)
	}
	if !info.Mode().IsRegular() {
		_ = f.Close()
		return nil, 0, fmt.Errorf("%w: %s is not a regular file", ErrCorrupt, h)
	}
	return &verifier{f: f, sum: sha256.New(), want: h}, info.Size(), nil
}

// verifier hashes what it reads and compares at the end.
type verifier struct {
	f    *os.File
	sum  hash.Hash
	want Hash
}

func (v *verifier) Read(p []byte) (int, error) {
	n, err := v.f.Read(p)
	v.sum.Write(p[:n])
	if errors.Is(err, io.EOF) {
		var got Hash
		copy(got[:], v.sum.Sum(nil))
		if got != v.want {
			return n, fmt.Errorf("%w: %s holds content with sum %s", ErrCorrupt, v.want, got)
		}
	}
	return n, err
}

func (v *verifier) Close() error { return v.f.Close() }

// Verify reads blob h to the end. If its content does not match h, the blob
// is removed (so that it is fetched again) and ErrCorrupt returned.
func (s *Store) Verify(h Hash) error {
	rc, _, err := s.Open(h)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, rc)
	_ = rc.Close()
	return s.refuse(h, err)
}

// refuse removes blob h if err says it is corrupt, and returns err.
func (s *Store) refuse(h Hash, err error) error {
	if errors.Is(err, ErrCorrupt) {
		if rerr := s.Remove(h); rerr != nil {
			return errors.Join(err, rerr)
		}
	}
	return err
}

// CopyTo writes a verified copy of blob h to dst with permissions perm: this
// is how a program or input is staged into a job's folder. The copy appears
// at dst only once its whole content has matched h; if it does not, nothing
// is written, the blob is removed, and ErrCorrupt returned. An existing dst
// is replaced.
func (s *Store) CopyTo(h Hash, dst string, perm fs.FileMode) error {
	rc, _, err := s.Open(h)
	if err != nil {
		return err
	}
	defer rc.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), tmpPrefix+"*")
	if err != nil {
		return fmt.Errorf("blob: copy %s to %s: %w", h, dst, err)
	}
	if err := fill(tmp, rc, perm); err != nil {
		_ = os.Remove(tmp.Name())
		return s.refuse(h, fmt.Errorf("blob: copy %s to %s: %w", h, dst, err))
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("blob: copy %s to %s: %w", h, dst, err)
	}
	return nil
}

// fill copies r into f, sets perm and closes f.
func fill(f *os.File, r io.Reader, perm fs.FileMode) error {
	_, err := io.Copy(f, r)
	if err == nil {
		err = f.Chmod(perm)
	}
	return errors.Join(err, f.Close())
}
