//go:build linux

package proc

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// probeNetns reports whether this process may make network namespaces: it
// makes one on a thread of its own, which then ends with the goroutine (a
// locked thread that is not unlocked is not reused).
func probeNetns() error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with its namespace
		errc <- unix.Unshare(unix.CLONE_NEWNET)
	}()
	if err := <-errc; err != nil {
		return fmt.Errorf("the kernel refused a network namespace: %w", err)
	}
	return nil
}

// enterNetns moves the calling thread (the shim's, locked) to a new
// network namespace and brings its loopback up: the only interface there.
func enterNetns() (string, error) {
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		return "unshare", err
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return "loopback", err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return "loopback", err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return "loopback", err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return "loopback", err
	}
	return "", nil
}
