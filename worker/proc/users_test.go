//go:build linux

package proc

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// Two pools on one lock folder, as two agents of one machine, never hand
// out the same user ID at once; a full range says so.
func TestUIDPoolsShareNothing(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("user IDs are handed out only to an agent running as root")
	}
	dir := filepath.Join(t.TempDir(), "uids")
	r := UIDRange{First: 1900100000, Count: 40}
	var pools []*uidPool
	for range 2 {
		p, err := newUIDPool(r, dir)
		if err != nil {
			t.Fatal(err)
		}
		pools = append(pools, p)
	}
	var mu sync.Mutex
	held := map[uint32]*os.File{}
	var wg sync.WaitGroup
	for _, p := range pools {
		wg.Go(func() {
			for range 20 {
				uid, f, err := p.take()
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if held[uid] != nil {
					t.Errorf("uid %d handed out twice", uid)
				}
				held[uid] = f
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if _, _, err := pools[0].take(); err == nil {
		t.Fatal("a full range handed out one more ID")
	}
	for _, f := range held {
		if err := pools[0].release(f); err != nil {
			t.Fatal(err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("%d lock files left after release", len(entries))
	}
}

func TestUIDLockFolderRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := newUIDPool(DefaultUIDRange, filepath.Join(dir, "uids")); err == nil {
		t.Fatal("a lock folder in a folder anyone may write was accepted")
	}
}
