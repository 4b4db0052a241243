//go:build linux

package worker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// openInJob opens path, a file below the job folder dir, for reading,
// refusing any symbolic link on the way: the job's user writes that
// folder, and the agent reading an output must not be led to its own
// files (its key) by a link the job planted. Without openat2 (Linux
// before 5.6) every component is checked with Lstat first.
func openInJob(dir, path string) (*os.File, error) {
	rel, err := filepath.Rel(dir, path)
	if err != nil || !filepath.IsLocal(rel) {
		return nil, fmt.Errorf("%s is not inside the job folder", path)
	}
	d, err := os.OpenFile(dir, os.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	fd, err := unix.Openat2(int(d.Fd()), rel, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOFOLLOW | unix.O_NONBLOCK,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if errors.Is(err, unix.ENOSYS) {
		return openNoLinks(dir, rel)
	}
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
		return nil, fmt.Errorf("%s goes through a symbolic link", rel)
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// openNoLinks opens dir/rel after checking that no component is a
// symbolic link (racy where openat2 is not: for old kernels only).
func openNoLinks(dir, rel string) (*os.File, error) {
	p := dir
	for _, c := range splitPath(rel) {
		p = filepath.Join(p, c)
		info, err := os.Lstat(p)
		if err != nil {
			return nil, err
		}
		if info.Mode()&os.ModeSymlink != 0 {
			return nil, fmt.Errorf("%s goes through a symbolic link", rel)
		}
	}
	return os.OpenFile(p, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
}

// splitPath gives the components of a relative path.
func splitPath(rel string) []string {
	var out []string
	for rel != "." && rel != "" {
		dir, file := filepath.Split(rel)
		out = append([]string{file}, out...)
		rel = filepath.Clean(dir)
	}
	return out
}
