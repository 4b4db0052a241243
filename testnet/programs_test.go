package testnet

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/node"
)

// The programs the tests run, each built once per test process (a build
// links for a second or more of a loaded machine's CPU, and a dozen tests
// run heat) into a folder TestMain removes.
var programs struct {
	mu    sync.Mutex
	dir   string
	built map[string]string // package dir -> binary
}

func TestMain(m *testing.M) {
	code := m.Run()
	if programs.dir != "" {
		os.RemoveAll(programs.dir)
	}
	os.Exit(code)
}

// buildProgram builds the Go program in folder pkg (relative to this
// package: ../examples/heat, ./testdata/clock), once per test process, and returns
// the binary's path.
func buildProgram(t testing.TB, pkg string) string {
	t.Helper()
	programs.mu.Lock()
	defer programs.mu.Unlock()
	if bin, ok := programs.built[pkg]; ok {
		return bin
	}
	if programs.dir == "" {
		dir, err := os.MkdirTemp("", "zorilla-programs")
		if err != nil {
			t.Fatal(err)
		}
		programs.dir, programs.built = dir, map[string]string{}
	}
	bin := filepath.Join(programs.dir, fmt.Sprint(len(programs.built)), filepath.Base(pkg))
	if b, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", pkg, err, b)
	}
	programs.built[pkg] = bin
	return bin
}

// uploadProgram builds the program in folder pkg (buildProgram) and
// uploads it to agent nd.
func uploadProgram(t testing.TB, nd *node.Node, pkg string) proto.FileRef {
	t.Helper()
	bin := buildProgram(t, pkg)
	h, size, err := nd.Blobs().PutFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	return proto.FileRef{Name: filepath.Base(bin), Hash: h.String(), Size: size}
}

// buildExample builds one of examples/ (once per test process) and
// uploads it to agent nd.
func buildExample(t testing.TB, nd *node.Node, name string) proto.FileRef {
	t.Helper()
	return uploadProgram(t, nd, "../examples/"+name)
}
