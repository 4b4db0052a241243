package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// The zorilla binary and the example programs the tests run, each built
// once per test process (a build links for some seconds of both cores) in
// a folder TestMain removes.
var built struct {
	mu   sync.Mutex
	dir  string
	bins map[string]builtBinary // package dir -> its build
}

type builtBinary struct {
	path string
	err  error
}

// buildOnce builds the Go command in folder pkg (relative to this
// package) once per test process and returns the binary's path.
func buildOnce(t *testing.T, pkg string) string {
	t.Helper()
	built.mu.Lock()
	defer built.mu.Unlock()
	b, ok := built.bins[pkg]
	if !ok {
		b = build(pkg)
		if built.bins == nil {
			built.bins = map[string]builtBinary{}
		}
		built.bins[pkg] = b
	}
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// build builds pkg into a folder of its own under built.dir; the
// binary is named after pkg's folder ("." is zorilla).
func build(pkg string) builtBinary {
	if built.dir == "" {
		dir, err := os.MkdirTemp("", "zorilla-bin")
		if err != nil {
			return builtBinary{err: err}
		}
		built.dir = dir
	}
	name := filepath.Base(pkg)
	if pkg == "." {
		name = "zorilla"
	}
	path := filepath.Join(built.dir, fmt.Sprint(len(built.bins)), name)
	if out, err := exec.Command("go", "build", "-o", path, pkg).CombinedOutput(); err != nil {
		return builtBinary{err: fmt.Errorf("go build %s: %v\n%s", pkg, err, out)}
	}
	return builtBinary{path: path}
}

// zorillaBinary builds this command once and returns the binary's path.
func zorillaBinary(t *testing.T) string { return buildOnce(t, ".") }

// exampleBinary builds examples/name once and returns the binary's path.
func exampleBinary(t *testing.T, name string) string { return buildOnce(t, "../../examples/"+name) }

func TestMain(m *testing.M) {
	// The agents tests start serve no web view unless a test asks: they
	// would all want the default port.
	os.Setenv("ZORILLA_WEB", "off")
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}
