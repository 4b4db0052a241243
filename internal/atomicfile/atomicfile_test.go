package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

// Write creates and then replaces a file, mode 0600, leaving no temporary
// file behind; a folder that does not exist is an error and writes nothing.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	for _, content := range []string{"first\n", "second, longer\n", ""} {
		if err := Write(path, []byte(content)); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(path); err != nil || string(b) != content {
			t.Fatalf("read %q, %v; want %q", b, err, content)
		}
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v", st.Mode(), err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("folder holds %d entries, want only the file", len(entries))
	}
	if err := Write(filepath.Join(dir, "no", "f"), []byte("x")); err == nil {
		t.Fatal("wrote into a folder that does not exist")
	}
}
