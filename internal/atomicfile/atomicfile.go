// Package atomicfile replaces a file whole, durably: a reader sees the old
// content or the new one, never a mix, and after a crash the new one is
// there once Write has returned. The agent keeps its job records and its
// allow and deny lists this way.
package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
)

// Write writes b to a temporary file (mode 0600) in path's folder, syncs
// it, renames it over path, and syncs the folder so the rename survives a
// crash.
func Write(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op once renamed
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return err
	}
	return nil
}
