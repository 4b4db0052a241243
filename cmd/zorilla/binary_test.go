package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/zorilla-p2p/zorilla/internal/gobuild"
)

// buildOnce builds the Go command in folder pkg (relative to this
// package) once per test process (gobuild) and returns the binary's path;
// the binary is named after pkg's folder ("." is zorilla).
func buildOnce(t *testing.T, pkg string) string {
	t.Helper()
	name := filepath.Base(pkg)
	if pkg == "." {
		name = "zorilla"
	}
	bin, err := gobuild.Once(pkg, name)
	if err != nil {
		t.Fatal(err)
	}
	return bin
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
	gobuild.Clean()
	os.Exit(code)
}
