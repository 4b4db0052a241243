// Package gobuild builds the Go programs that tests run as processes
// (the zorilla binary, the examples, test programs): each once per test
// process, as a build links for seconds of a loaded machine's CPU and many
// tests run the same program, into a folder Clean removes.
package gobuild

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

var cache struct {
	mu   sync.Mutex
	dir  string
	bins map[string]result // package folder -> its build
}

type result struct {
	path string
	err  error
}

// Once builds the Go program in folder pkg (as `go build` takes it,
// relative to the working directory) into a binary called name, the first
// time it is asked for pkg in this process, and returns the binary's
// path. A build that failed fails every call for pkg.
func Once(pkg, name string) (string, error) {
	cache.mu.Lock()
	defer cache.mu.Unlock()
	r, ok := cache.bins[pkg]
	if !ok {
		r = build(pkg, name)
		if cache.bins == nil {
			cache.bins = map[string]result{}
		}
		cache.bins[pkg] = r
	}
	return r.path, r.err
}

// build builds pkg into a folder of its own under cache.dir; cache.mu is
// held.
func build(pkg, name string) result {
	if cache.dir == "" {
		dir, err := os.MkdirTemp("", "zorilla-programs")
		if err != nil {
			return result{err: fmt.Errorf("build %s: %w", pkg, err)}
		}
		cache.dir = dir
	}
	path := filepath.Join(cache.dir, fmt.Sprint(len(cache.bins)), name)
	if out, err := exec.Command("go", "build", "-o", path, pkg).CombinedOutput(); err != nil {
		return result{err: fmt.Errorf("go build %s: %v\n%s", pkg, err, out)}
	}
	return result{path: path}
}

// Clean removes what Once built: TestMain calls it once the tests ran.
func Clean() {
	cache.mu.Lock()
	defer cache.mu.Unlock()
	if cache.dir != "" {
		_ = os.RemoveAll(cache.dir)
		cache.dir, cache.bins = "", nil
	}
}
