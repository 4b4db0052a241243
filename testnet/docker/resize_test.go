package docker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/node"
	"github.com/zorilla-p2p/zorilla/testnet/bench"
)

// TestDockerResizeCost measures a malleable job's resizes on eight
// one-slot agent containers (bench.ResizeCost): a grow from 4, a give-way
// back to 4, and a plain checkpoint restart, with 1 ms between the
// containers. Opt-in (ZORILLA_DOCKER_RESIZE=1): it is a figure of
// BENCHMARKS.md, not a check CI needs.
func TestDockerResizeCost(t *testing.T) {
	if os.Getenv("ZORILLA_DOCKER_RESIZE") == "" {
		t.Skip("set ZORILLA_DOCKER_RESIZE=1 to measure resizes on containers")
	}
	needDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	tag := fmt.Sprintf("zorilla-testnet:test-%d-resize", os.Getpid()) // its own: heat, not the shared image's examples
	t.Cleanup(func() {
		msg, err := removeTestImage(tag)
		if err != nil {
			t.Error(err)
		}
		t.Log(msg)
	})
	bin := t.TempDir()
	src, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if err := BuildImage(ctx, ImageSpec{Tag: tag, Source: src, Examples: []string{"heat"}, BinDir: bin}); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "zr")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	cfg := DefaultConfig()
	cfg.Name, cfg.Dir, cfg.Image = fmt.Sprintf("zr%d", os.Getpid()%100000), filepath.Join(dir, "t"), tag
	cfg.Shaper = shaperForTest()
	tn := upConverged(t, ctx, cfg, "a 8 x 1", 5)
	cl, err := node.Dial(tn.Containers()[0].DataDir)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var log strings.Builder
	steps, err := bench.ResizeCost(ctx, cl, filepath.Join(bin, "examples", "heat"), &log)
	var table strings.Builder
	_ = bench.WriteResizeTable(&table, steps)
	t.Logf("8 one-slot containers, 1 ms apart:\n%s", table.String())
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
}
