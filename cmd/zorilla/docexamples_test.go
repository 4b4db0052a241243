package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocGoProgramsBuild builds every complete Go program the guides show
// (a ```go block starting with "package main") as a package of this module,
// through a build overlay, so the programs users copy compile against the
// mpi package as it is.
func TestDocGoProgramsBuild(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command in PATH to build the guides' programs")
	}
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	progRE := regexp.MustCompile("(?s)```go\n(package main\n.*?)```")
	found := 0
	for _, doc := range userDocs(t) {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range progRE.FindAllSubmatch(b, -1) {
			found++
			dir := t.TempDir()
			src := filepath.Join(dir, "main.go")
			if err := os.WriteFile(src, m[1], 0o644); err != nil {
				t.Fatal(err)
			}
			// A folder that does not exist in the tree, inside the module.
			pkg := filepath.Join(root, "examples", "internal", "docprog")
			overlay, _ := json.Marshal(map[string]map[string]string{"Replace": {filepath.Join(pkg, "main.go"): src}})
			ov := filepath.Join(dir, "overlay.json")
			if err := os.WriteFile(ov, overlay, 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(goBin, "build", "-overlay", ov, "-o", filepath.Join(dir, "prog"), pkg)
			cmd.Dir = root
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("the program in %s does not build: %v\n%s", doc, err, out)
			}
		}
	}
	if found == 0 {
		t.Fatal("the guides show no Go program")
	}
}

// TestMPICHRingExample builds examples/mpich/ring.c, the MPICH program the
// guides start from, and runs it under mpiexec: its token must come back
// right.
func TestMPICHRingExample(t *testing.T) {
	cc, err1 := exec.LookPath("mpicc.mpich")
	run, err2 := exec.LookPath("mpiexec.mpich")
	if err1 != nil || err2 != nil {
		t.Skip("MPICH is not installed (apt-get install mpich libmpich-dev)")
	}
	bin := filepath.Join(t.TempDir(), "ring")
	if out, err := exec.Command(cc, "-O2", "-Wall", "-Werror", "-o", bin, filepath.Join(repoRoot, "examples", "mpich", "ring.c")).CombinedOutput(); err != nil {
		t.Fatalf("mpicc.mpich: %v\n%s", err, out)
	}
	out, err := exec.Command(run, "-n", "3", bin, "10").CombinedOutput()
	if err != nil {
		t.Fatalf("mpiexec.mpich -n 3 ring 10: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "3 ranks, 10 laps, token 30,") {
		t.Errorf("ring printed %q, want its token 30 after 10 laps of 3 ranks", out)
	}
}
