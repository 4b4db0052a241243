package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A program no host can run is refused at once with one line, the same
// every time; a dynamically linked binary gets a warning that names the
// fix; a static binary and a script pass quietly.
func TestCheckProgram(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if w, err := inspectProgram(write("data.txt", "just numbers\n1 2 3\n")); err == nil || w != "" || !strings.Contains(err.Error(), "neither a binary (ELF) nor a script") {
		t.Errorf("a data file: %q, %v", w, err)
	}
	if _, err := inspectProgram(write("empty", "")); err == nil {
		t.Error("an empty file passed")
	}
	if _, err := inspectProgram(write("bad.elf", "\x7fELF garbage")); err == nil || !strings.Contains(err.Error(), "not a valid ELF") {
		t.Errorf("a broken ELF: %v", err)
	}
	if w, err := inspectProgram(write("s.sh", "#!/bin/sh\necho hi\n")); w != "" || err != nil {
		t.Errorf("a script: %q, %v", w, err)
	}
	if w, err := inspectProgram("/bin/sh"); err != nil || !strings.Contains(w, "dynamically linked") || !strings.Contains(w, "CGO_ENABLED=0") {
		t.Errorf("/bin/sh (dynamic): %q, %v", w, err)
	}
	if testing.Short() {
		return
	}
	static := filepath.Join(dir, "static")
	src := write("main.go", "package main\nfunc main() {}\n")
	cmd := exec.Command("go", "build", "-o", static, src)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build a static binary: %v\n%s", err, out)
	}
	if w, err := inspectProgram(static); w != "" || err != nil {
		t.Errorf("a static Go binary: %q, %v", w, err)
	}
}

// submit refuses such a program before anything is sent: exit 2, one line.
func TestSubmitRefusesAProgramNoHostCanRun(t *testing.T) {
	nodes := agents(t, 1, 1)
	p := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(p, []byte("not a program\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the same answer every time
		r := zorilla("submit", "--data-dir", nodes[0].Config().DataDir, p)
		if r.code != 2 || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, "no host can run it") {
			t.Fatalf("want exit 2 and one line: %v", r)
		}
	}
}
