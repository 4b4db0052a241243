package gobuild

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestMain(m *testing.M) {
	code := m.Run()
	Clean()
	os.Exit(code)
}

func TestOnceBuildsOnceAndRuns(t *testing.T) {
	first, err := Once("./testdata/hello", "hello")
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(first)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Once("./testdata/hello", "hello")
	if err != nil {
		t.Fatal(err)
	}
	if again != first {
		t.Fatalf("second call built %s, the first %s", again, first)
	}
	if info2, err := os.Stat(again); err != nil || !info2.ModTime().Equal(info.ModTime()) {
		t.Fatalf("the binary was written again (%v)", err)
	}
	out, err := exec.Command(first).Output()
	if err != nil || strings.TrimSpace(string(out)) != "hello from a built program" {
		t.Fatalf("running it: %q, %v", out, err)
	}
}

func TestOnceReportsAFailedBuildEveryTime(t *testing.T) {
	for i := 0; i < 2; i++ {
		if _, err := Once("./testdata/missing", "missing"); err == nil || !strings.Contains(err.Error(), "go build ./testdata/missing") {
			t.Fatalf("call %d: %v, want the build's failure", i, err)
		}
	}
}
