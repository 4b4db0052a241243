package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestVersionStampedFromAClone builds the command as a user does in a
// clone (this work tree's files, committed in a new git repository): go
// build stamps the commit and a pseudo-version naming it; a change not
// committed adds +dirty and says so; with -buildvcs=false (which GOFLAGS
// may hold) the version says why it names no commit.
func TestVersionStampedFromAClone(t *testing.T) {
	if testing.Short() {
		t.Skip("copies the sources and builds the binary")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	list, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Skipf("the sources are not in a git work tree: %v", err)
	}
	src := t.TempDir()
	for _, f := range strings.Split(strings.TrimRight(string(list), "\x00"), "\x00") {
		copyFile(t, filepath.Join(root, f), filepath.Join(src, f))
	}
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=test", "-c", "user.email=test@example.org"}, args...)...)
		cmd.Dir = src
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-q", "-m", "a clone")
	head := git("rev-parse", "HEAD")
	version := func(vcs string) string {
		t.Helper()
		bin := filepath.Join(t.TempDir(), "zorilla")
		// No -trimpath: the dependencies then hit the build cache the
		// tests' own build filled, and only the copy's packages compile.
		build := exec.Command("go", "build", "-buildvcs="+vcs, "-o", bin, "./cmd/zorilla")
		build.Dir = src
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build -buildvcs=%s: %v\n%s", vcs, err, out)
		}
		out, err := exec.Command(bin, "version").Output()
		if err != nil {
			t.Fatalf("zorilla version: %v", err)
		}
		return string(out)
	}

	pseudo := `v\d+\.\d+\.\d+-(\d+\.)?\d{14}-` + head[:12]
	if out := version("true"); !regexp.MustCompile(`^zorilla ` + pseudo + "\ncommit  " + head + "\n").MatchString(out) {
		t.Errorf("built from a clean clone:\n%s\nwant a version and commit naming %s", out, head)
	}
	f, err := os.OpenFile(filepath.Join(src, "README.md"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString("\na change not committed\n")
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if out := version("true"); !regexp.MustCompile(`^zorilla ` + pseudo + `\+dirty` + "\ncommit  " + head + ` \(with uncommitted changes\)` + "\n").MatchString(out) {
		t.Errorf("built with a change not committed:\n%s", out)
	}
	if out := version("false"); !strings.HasPrefix(out, "zorilla devel\ncommit  unknown (built without VCS stamping: go run, -buildvcs=false, or outside a git clone)\n") {
		t.Errorf("built with -buildvcs=false:\n%s", out)
	}
}

// copyFile copies a file of the work tree, keeping its mode; a file
// deleted but not yet committed is skipped.
func copyFile(t *testing.T, from, to string) {
	t.Helper()
	st, err := os.Lstat(from)
	if os.IsNotExist(err) {
		return
	}
	if err != nil || !st.Mode().IsRegular() {
		t.Fatalf("%s: %v (mode %v)", from, err, st.Mode())
	}
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, st.Mode().Perm()); err != nil {
		t.Fatal(err)
	}
}
