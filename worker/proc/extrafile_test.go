//go:build linux

package proc

import (
	"io"
	"os"
	"strings"
	"testing"
)

// TestExtraFile: the program finds Spec.ExtraFile open at the descriptor
// its ExtraFileEnv names, started directly and through the shim, and the
// parent's copy is closed once the child has it.
func TestExtraFile(t *testing.T) {
	t.Parallel()
	for _, limits := range []Limits{{}, {OpenFiles: 100}} { // direct exec, and through the shim
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		s := shSpec(t, `echo "fd $PMI_FD" >&"$PMI_FD"`)
		s.Limits, s.ExtraFile, s.ExtraFileEnv = limits, w, "PMI_FD"
		c := newCollector()
		wait(t, start(t, testConfig(), s, c))
		got, err := io.ReadAll(r) // EOF: the child's end closed, and the parent's
		_ = r.Close()
		if err != nil || !strings.HasPrefix(string(got), "fd ") {
			t.Errorf("limits %+v: read %q, %v (stderr %v)", limits, got, err, c.all(Stderr))
		}
	}
}
