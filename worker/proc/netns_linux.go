//go:build linux

package proc

import (
	"fmt"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// netnsProbe is the answer of probeNetns, asked once per process: a
// testnet of hundreds of agents in one process need not make hundreds of
// namespaces to learn it.
var netnsProbe = sync.OnceValue(probeNetnsOnce)

// probeNetns reports whether this process may make network namespaces.
func probeNetns() error { return netnsProbe() }

// probeNetnsOnce makes a network namespace on a thread of its own, which
// then ends with the goroutine (a locked thread that is not unlocked is
// not reused).
func probeNetnsOnce() error {
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
