package docker

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

//go:embed Dockerfile
var dockerfile []byte

// DefaultImage is the tag of the agent image.
const DefaultImage = "zorilla-testnet:dev"

// Examples are the example programs put in the image, beside the agent.
var Examples = []string{"hostname", "pi", "is"}

// ImageSpec says how to build the agent image.
type ImageSpec struct {
	Tag string
	// Source is the root of the zorilla module, where the binaries are
	// built from; "" finds it from the working directory up.
	Source string
	// Examples are the example programs (folders of examples/) to add.
	Examples []string
	// BinDir, if set, is where the binaries are built and kept (zorilla,
	// examples/NAME), for the host to use too; the image is built from it.
	// Otherwise a temporary folder is used and removed.
	BinDir string
	// Log receives the build's progress; nil discards it.
	Log io.Writer
}

// BuildImage builds the static binaries (CGO_ENABLED=0) into a temporary
// context folder with the Dockerfile, and builds the image FROM scratch:
// nothing is pulled or downloaded.
func BuildImage(ctx context.Context, spec ImageSpec) error {
	if spec.Tag == "" {
		spec.Tag = DefaultImage
	}
	logw := spec.Log
	if logw == nil {
		logw = io.Discard
	}
	src, err := moduleRoot(spec.Source)
	if err != nil {
		return err
	}
	tmp := spec.BinDir
	if tmp == "" {
		if tmp, err = os.MkdirTemp("", "zorilla-image-"); err != nil {
			return fmt.Errorf("docker: image context: %w", err)
		}
		defer os.RemoveAll(tmp)
	}
	builds := map[string]string{filepath.Join(tmp, "zorilla"): "./cmd/zorilla"}
	for _, e := range spec.Examples {
		builds[filepath.Join(tmp, "examples", e)] = "./examples/" + e
	}
	for out, pkg := range builds {
		fmt.Fprintf(logw, "go build %s\n", pkg)
		if err := goBuild(ctx, src, pkg, out); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Join(tmp, "examples"), 0o755); err != nil {
		return fmt.Errorf("docker: image context: %w", err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "Dockerfile"), dockerfile, 0o644); err != nil {
		return fmt.Errorf("docker: image context: %w", err)
	}
	fmt.Fprintf(logw, "docker build -t %s\n", spec.Tag)
	if _, err := runTool(ctx, "docker", "build", "-q", "--label", LabelRole+"=image", "-t", spec.Tag, tmp); err != nil {
		return fmt.Errorf("docker: build image: %w", err)
	}
	return nil
}

// goBuild builds one static binary of the module at src.
func goBuild(ctx context.Context, src, pkg, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", out, pkg)
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("docker: go build %s: %w: %s", pkg, err, strings.TrimSpace(string(b)))
	}
	return nil
}

// moduleRoot returns dir, or the first folder from the working directory
// up whose go.mod declares the zorilla module.
func moduleRoot(dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("docker: find the zorilla source: %w", err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		b, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil && strings.Contains(string(b), "module github.com/zorilla-p2p/zorilla\n") {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("docker: the zorilla source (its go.mod) is not in the working directory or above; give it with --src")
		}
	}
}

// imageExists tells whether the docker engine has the image tag.
func imageExists(ctx context.Context, d dockerCLI, tag string) bool {
	_, err := d.run(ctx, "image", "inspect", "-f", "{{.Id}}", tag)
	return err == nil
}
