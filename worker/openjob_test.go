//go:build linux

package worker

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// An output file is read only if no symbolic link leads to it: a job must
// not make the agent send its key.
func TestOpenInJob(t *testing.T) {
	root := t.TempDir()
	secret := filepath.Join(root, "identity.key")
	dir := filepath.Join(root, "job")
	for _, err := range []error{
		os.WriteFile(secret, []byte("key"), 0o600),
		os.MkdirAll(filepath.Join(dir, "sub"), 0o700),
		os.WriteFile(filepath.Join(dir, "sub", "out.txt"), []byte("result"), 0o600),
		os.Symlink(secret, filepath.Join(dir, "link.txt")),
		os.Symlink(root, filepath.Join(dir, "updir")),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, open := range map[string]func(string, string) (*os.File, error){
		"openat2": openInJob,
		"lstat": func(dir, path string) (*os.File, error) {
			rel, _ := filepath.Rel(dir, path)
			return openNoLinks(dir, rel)
		},
	} {
		f, err := open(dir, filepath.Join(dir, "sub", "out.txt"))
		if err != nil {
			t.Fatalf("a plain output: %v", err)
		}
		b, _ := io.ReadAll(f)
		f.Close()
		if string(b) != "result" {
			t.Fatalf("read %q", b)
		}
		for _, bad := range []string{"link.txt", "updir/identity.key"} {
			if f, err := open(dir, filepath.Join(dir, bad)); err == nil {
				f.Close()
				t.Errorf("%s: opened through a symbolic link", bad)
			}
		}
	}
	if _, err := openInJob(dir, secret); err == nil {
		t.Error("opened a file outside the job folder")
	}
}
