package proc

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestCleanupRemovesUnwritableTree(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "job")
	deep := filepath.Join(dir, "a", "b")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(deep, "f"), []byte("x"), 0o400); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "keep")
	if err := os.WriteFile(outside, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(outside), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	// A job that takes away its own permissions.
	for _, d := range []string{deep, filepath.Join(dir, "a"), dir} {
		if err := os.Chmod(d, 0o500); err != nil {
			t.Fatal(err)
		}
	}
	if err := Cleanup(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("job folder left: %v", err)
	}
	if _, err := os.Stat(outside); err != nil {
		t.Fatalf("Cleanup followed a link out of the folder: %v", err)
	}
	if err := Cleanup(dir); err != nil {
		t.Fatalf("Cleanup of a folder already gone: %v", err)
	}
}

func TestCleanupRefusesBadPaths(t *testing.T) {
	for _, dir := range []string{"", "/", "relative/job", "/var/../etc", "/tmp/job/"} {
		if err := Cleanup(dir); err == nil {
			t.Errorf("Cleanup(%q) accepted", dir)
		}
	}
}
