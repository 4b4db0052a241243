package localnet

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// modulePath is the module whose examples Program builds.
const modulePath = "github.com/zorilla-p2p/zorilla"

// Program is program, or when it is empty examples/<example> built into
// the network's folder, saying so on the network's log: with an empty Go
// build cache the build is the longest step of a demo.
func (n *Net) Program(ctx context.Context, program, example string) (string, error) {
	if program != "" {
		return program, nil
	}
	fmt.Fprintf(n.log, "zorilla %s: building examples/%s with go build (a minute or more with an empty Go build cache, seconds once built)\n", n.who, example)
	t0 := time.Now()
	prog, err := BuildExample(ctx, n.dir, example)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(n.log, "zorilla %s: built examples/%s in %v\n", n.who, example, since(t0))
	return prog, nil
}

// BuildExample compiles examples/<name> into dir with the Go toolchain,
// from the zorilla module found around the working directory or the
// source this package was built from.
func BuildExample(ctx context.Context, dir, name string) (string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("no Go toolchain on PATH to build examples/%s; build an MPI program yourself "+
			"(e.g. go build ./examples/%s) and run zorilla demo --program FILE", name, name)
	}
	root := moduleRoot()
	if root == "" {
		return "", fmt.Errorf("the %s sources are not around %s; run the demo from a clone of the repository, "+
			"or build a program and run zorilla demo --program FILE", modulePath, mustGetwd())
	}
	out := filepath.Join(dir, name)
	cmd := exec.CommandContext(ctx, goBin, "build", "-o", out, modulePath+"/examples/"+name)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build examples/%s in %s: %v\n%s", name, root, err, b)
	}
	return out, nil
}

// moduleRoot finds the folder of the zorilla module's go.mod: above the
// working directory, or above this file's source when the binary was built
// from a clone (go run ./cmd/zorilla).
func moduleRoot() string {
	starts := []string{mustGetwd()}
	if _, file, _, ok := runtime.Caller(0); ok {
		starts = append(starts, filepath.Dir(file))
	}
	for _, s := range starts {
		for dir := s; dir != ""; {
			if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil {
				if moduleOf(b) == modulePath {
					return dir
				}
				break // another module: its examples are not ours
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return ""
}

// moduleOf reads the module path of a go.mod file.
func moduleOf(gomod []byte) string {
	for _, line := range strings.Split(string(gomod), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

func mustGetwd() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	return wd
}
