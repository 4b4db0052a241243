package proc

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Cleanup removes a job folder and everything in it. Call it after every
// process that ran in dir has ended (Process.Wait). Folders the job made
// unwritable are made writable again first. A folder already gone is not an
// error; a path that is not a clean absolute path below / is refused.
func Cleanup(dir string) error {
	if err := checkDir(dir); err != nil {
		return fmt.Errorf("proc: cleanup: %w", err)
	}
	if os.RemoveAll(dir) == nil {
		return nil
	}
	// WalkDir visits a folder before reading it, so the chmod comes first.
	// Its entries come from Lstat: a symbolic link is never followed.
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(path, 0o700)
		}
		return nil
	})
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("proc: cleanup %s: %w", dir, err)
	}
	return nil
}
