package testnet

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/zorilla-p2p/zorilla/internal/gobuild"
	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/node"
)

func TestMain(m *testing.M) {
	code := m.Run()
	gobuild.Clean()
	os.Exit(code)
}

// buildProgram builds the Go program in folder pkg (relative to this
// package: ../examples/heat, ./testdata/clock), once per test process
// (gobuild), and returns the binary's path.
func buildProgram(t testing.TB, pkg string) string {
	t.Helper()
	bin, err := gobuild.Once(pkg, filepath.Base(pkg))
	if err != nil {
		t.Fatal(err)
	}
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
