package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// linkAgainst builds a program that needs a shared library of the given
// soname (an empty one, built here), as an MPI program needs its MPI.
func linkAgainst(t *testing.T, soname string) string {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not found")
	}
	dir := t.TempDir()
	src, main := filepath.Join(dir, "lib.c"), filepath.Join(dir, "main.c")
	if err := os.WriteFile(src, []byte("int lib_f(void){return 0;}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(main, []byte("int lib_f(void);\nint main(void){return lib_f();}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(dir, soname)
	prog := filepath.Join(dir, "prog")
	for _, args := range [][]string{
		{"-shared", "-fPIC", "-Wl,-soname," + soname, "-o", lib, src},
		{"-o", prog, main, lib},
	} {
		if b, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
			t.Fatalf("gcc %v: %v\n%s", args, err, b)
		}
	}
	return prog
}

func TestCheckMPI(t *testing.T) {
	cases := []struct {
		soname string
		pmi    bool
		want   string // in the error; "" for none
	}{
		{"libmpi.so.40", true, "built with Open MPI (it needs libmpi.so.40)"},
		{"libmpi.so.40", false, "PMIx"},
		{"libmpich.so.12", false, "submit it with --pmi"},
		{"libmpich.so.12", true, ""},
		{"libfoo.so.1", false, ""},
		{"libfoo.so.1", true, ""},
	}
	for _, c := range cases {
		err := checkMPI(linkAgainst(t, c.soname), c.pmi)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s, pmi=%v: %v, want %q", c.soname, c.pmi, err, c.want)
		}
	}
	if err := checkMPI("/nonexistent", true); err != nil {
		t.Errorf("a file that is not ELF: %v (inspectProgram says why)", err)
	}
}
