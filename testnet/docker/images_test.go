package docker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fakeDocker writes a docker command that logs its arguments, one call a
// line, and answers as an engine holding the image zorilla-testnet:dev
// and two untagged agent images, the second used by a container.
func fakeDocker(t *testing.T, extra string) (bin, log string) {
	t.Helper()
	dir := t.TempDir()
	bin, log = filepath.Join(dir, "docker"), filepath.Join(dir, "calls")
	script := `#!/bin/sh
echo "$*" >> ` + log + `
case "$*" in
"image inspect -f {{.Id}} zorilla-testnet:dev") echo sha256:aaa ;;
"image inspect"*) echo "Error: No such image" >&2; exit 1 ;;
"image ls -q --no-trunc --filter dangling=true --filter label=zorilla.role=image") printf 'sha256:bbb\nsha256:ccc\n' ;;
"image rm sha256:ccc") echo "Error response from daemon: conflict: unable to delete ccc (cannot be forced) - image is being used by running container 42" >&2; exit 1 ;;
` + extra + `
"image rm "*) echo "Deleted: $3" ;;
*) echo "unexpected docker $*" >&2; exit 3 ;;
esac
`
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, log
}

func TestRemoveImages(t *testing.T) {
	bin, log := fakeDocker(t, "")
	removed, err := RemoveImages(context.Background(), bin, "zorilla-testnet:dev", "zorilla-testnet:gone")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"zorilla-testnet:dev", "sha256:bbb"}; !slices.Equal(removed, want) {
		t.Errorf("removed %q, want %q (the tag, and the untagged image no container uses)", removed, want)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	calls := strings.Split(strings.TrimSpace(string(b)), "\n")
	want := []string{
		"image inspect -f {{.Id}} zorilla-testnet:dev", "image rm zorilla-testnet:dev",
		"image inspect -f {{.Id}} zorilla-testnet:gone",
		"image ls -q --no-trunc --filter dangling=true --filter label=zorilla.role=image",
		"image rm sha256:bbb", "image rm sha256:ccc",
	}
	if !slices.Equal(calls, want) {
		t.Errorf("docker calls:\n%s\nwant:\n%s", strings.Join(calls, "\n"), strings.Join(want, "\n"))
	}
}

// A tag still used by a container is not removed, and the error says why
// and what to do.
func TestRemoveImagesTagInUse(t *testing.T) {
	bin, _ := fakeDocker(t, `"image rm zorilla-testnet:dev") echo "Error response from daemon: conflict: unable to remove repository reference (must force) - container 42 is using its referenced image aaa" >&2; exit 1 ;;`)
	removed, err := RemoveImages(context.Background(), bin, "zorilla-testnet:dev")
	if !errors.Is(err, ErrImageInUse) || !strings.Contains(err.Error(), "zorilla-testnet:dev is still used by containers") || len(removed) != 0 {
		t.Fatalf("removed %q, err %v; want nothing removed and an in-use error", removed, err)
	}
}
