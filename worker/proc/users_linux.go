//go:build linux

package proc

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// maxUIDTries bounds the IDs one NewSandbox tries before it gives up.
const maxUIDTries = 1024

// uidPool hands out the user IDs of AutoUsers. An ID is held by an
// exclusive flock on its file in the lock folder, so agents of one machine
// (and runners of one process) never share one; the kernel drops the lock
// when the agent dies. next only spreads the search.
type uidPool struct {
	r   UIDRange
	dir string

	mu   sync.Mutex // guards next
	next uint32
}

// newUIDPool makes the lock folder (mode 0700) and checks that only root
// can write in it or its parent.
func newUIDPool(r UIDRange, dir string) (*uidPool, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("user ID lock folder: %w", err)
	}
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := CheckPrivateDir(d); err != nil {
			return nil, fmt.Errorf("user ID lock folder: %w", err)
		}
	}
	return &uidPool{r: r, dir: dir}, nil
}

// take holds a free user ID: one whose lock it gets and that no process
// runs as (a process left by a killed agent keeps its ID out of use).
// Closing the returned file gives the ID back.
func (p *uidPool) take() (uint32, *os.File, error) {
	p.mu.Lock()
	start := p.next
	p.next = (p.next + 1) % p.r.Count
	p.mu.Unlock()
	for i := uint32(0); i < min(p.r.Count, maxUIDTries); i++ {
		uid := p.r.First + (start+i)%p.r.Count
		f, err := p.lock(uid)
		if err != nil {
			if errors.Is(err, unix.EWOULDBLOCK) {
				continue
			}
			return 0, nil, err
		}
		if busy, err := uidInUse(uid); err != nil || busy {
			_ = f.Close()
			if err != nil {
				return 0, nil, err
			}
			log.Warnw("user ID skipped: processes still run as it", "uid", uid)
			continue
		}
		return uid, f, nil
	}
	return 0, nil, fmt.Errorf("no free user ID in %v after %d tries: raise the range (--uid-range)", p.r, min(p.r.Count, maxUIDTries))
}

// lock takes the lock of uid without waiting.
func (p *uidPool) lock(uid uint32) (*os.File, error) {
	path := filepath.Join(p.dir, strconv.FormatUint(uint64(uid), 10))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("user ID lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = f.Close()
		return nil, err
	}
	// The holder before may have removed the file between our open and
	// our lock (release does): then the lock is on a file no one else
	// sees, and the ID counts as taken.
	var held, now unix.Stat_t
	if unix.Fstat(int(f.Fd()), &held) != nil || unix.Stat(path, &now) != nil || held.Ino != now.Ino || held.Dev != now.Dev {
		_ = f.Close()
		return nil, unix.EWOULDBLOCK
	}
	return f, nil
}

// release gives back the ID held by lock (from take): its file goes, so
// that the folder holds only the IDs in use.
func (p *uidPool) release(lock *os.File) error {
	_ = os.Remove(lock.Name())
	return lock.Close()
}

// uidInUse reports whether some process runs with uid as its real,
// effective or saved user ID.
func uidInUse(uid uint32) (bool, error) {
	pids, err := allPids()
	if err != nil {
		return false, err
	}
	for _, pid := range pids {
		if containsUID(procUIDs(pid), uid) {
			return true, nil
		}
	}
	return false, nil
}

// allPids lists the processes of the machine.
func allPids() ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, pid)
		}
	}
	return out, nil
}

// procUIDs reads the user IDs of pid from its status; nil if it is gone
// or a zombie (which runs nothing any more).
func procUIDs(pid int) []uint32 {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return nil
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if state, ok := strings.CutPrefix(line, "State:"); ok && strings.HasPrefix(strings.TrimSpace(state), "Z") {
			return nil
		}
		rest, ok := strings.CutPrefix(line, "Uid:")
		if !ok {
			continue
		}
		var out []uint32
		for _, s := range strings.Fields(rest) {
			if n, err := strconv.ParseUint(s, 10, 32); err == nil {
				out = append(out, uint32(n))
			}
		}
		return out
	}
	return nil
}

func containsUID(s []uint32, v uint32) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// killUser sends SIGKILL to every process running as uid until none is
// left (a killed process takes a moment to become a zombie, which no longer
// counts) or timeout has passed, and returns how many it signalled. Only a
// sandbox whose uid is its own calls it: whatever runs as that uid is the
// job's, even a process that left its group, within this PID namespace
// (an agent in a container has a lock folder of its own, and may hand out
// the same ID).
func killUser(uid uint32, timeout time.Duration) (int, error) {
	n := 0
	deadline := time.Now().Add(timeout)
	backoff := time.Millisecond
	for {
		pids, err := allPids()
		if err != nil {
			return n, err
		}
		found := 0
		self, _ := os.Readlink("/proc/self/ns/pid")
		for _, pid := range pids {
			// A process of another PID namespace (a container) is another
			// agent's, whose lock folder is not ours: never touch it.
			ns, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/pid")
			if ns == self && containsUID(procUIDs(pid), uid) {
				found++
				if unix.Kill(pid, unix.SIGKILL) == nil {
					n++
				}
			}
		}
		if found == 0 {
			return n, nil
		}
		if time.Now().After(deadline) {
			return n, fmt.Errorf("%d processes still run as uid %d after %v", found, uid, timeout)
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, 50*time.Millisecond)
	}
}
