package main

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Ranks sharing a host each work in a folder of their own: on a
// concentrate job of 4 ranks on one agent, each rank's result.txt comes
// back as result.txt.<rank>, a folder output as a tar, both copied into
// --output-dir, and submit says where they went.
func TestOutputsPerRankIntoOutputDir(t *testing.T) {
	nodes := agents(t, 1, 4)
	prog := script(t, `echo "rank $ZORILLA_RANK" > result.txt
mkdir -p out/sub && echo "deep $ZORILLA_RANK" > out/sub/f`)
	outDir := filepath.Join(t.TempDir(), "results")
	r := zorilla("submit", "--data-dir", nodes[0].Config().DataDir, "-n", "4", "-a", "concentrate",
		"--output", "result.txt", "--output", "out", "--output-dir", outDir, prog)
	if r.code != 0 {
		t.Fatalf("submit: %v", r)
	}
	want := []string{"out.tar.0", "out.tar.1", "out.tar.2", "out.tar.3", "result.txt.0", "result.txt.1", "result.txt.2", "result.txt.3"}
	entries, err := os.ReadDir(outDir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if !slices.Equal(got, want) {
		t.Fatalf("output dir holds %q, want %q\n%v", got, want, r)
	}
	for rank := range 4 {
		tag := string(rune('0' + rank))
		if b, err := os.ReadFile(filepath.Join(outDir, "result.txt."+tag)); err != nil || string(b) != "rank "+tag+"\n" {
			t.Errorf("result.txt.%s: %q, %v", tag, b, err)
		}
		if got := tarFile(t, filepath.Join(outDir, "out.tar."+tag), "sub/f"); got != "deep "+tag+"\n" {
			t.Errorf("out.tar.%s: sub/f is %q", tag, got)
		}
	}
	if !strings.Contains(r.stderr, "8 output files in "+outDir+": out.tar.0") {
		t.Errorf("submit does not say where the outputs went:\n%s", r.stderr)
	}
	if strings.Contains(r.stderr, "zorilla: zorilla:") || strings.Contains(r.stderr, "not sent") {
		t.Errorf("submit complained:\n%s", r.stderr)
	}
}

// An --output-dir that is a file is refused before anything runs.
func TestOutputDirIsAFile(t *testing.T) {
	nodes := agents(t, 1, 1)
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r := zorilla("submit", "--data-dir", nodes[0].Config().DataDir, "--output", "x", "--output-dir", file, script(t, "echo ran"))
	if r.code != 2 || !strings.Contains(r.stderr, "is not a folder") || strings.Contains(r.stdout, "ran") {
		t.Fatalf("want exit 2 before running: %v", r)
	}
}

// tarFile returns the content of name in the tar at path.
func tarFile(t *testing.T, path, name string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("%s: no %s in the tar: %v", path, name, err)
		}
		if h.Name == name {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
	}
}
