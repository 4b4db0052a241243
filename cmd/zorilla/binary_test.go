package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// The zorilla binary, built once for the tests that run it as a user does
// (each build is some seconds of both cores), in a folder TestMain removes.
var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

// zorillaBinary builds this command once and returns the binary's path.
func zorillaBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "zorilla-bin"); binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "zorilla")
		if out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	// The agents tests start serve no web view unless a test asks: they
	// would all want the default port.
	os.Setenv("ZORILLA_WEB", "off")
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}
