package mpi

import (
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"testing"
)

// TestCheckpointWritesReuseTheirBuffer: a program may take a checkpoint
// every iteration; each one must not cost a fresh megabyte of buffer.
func TestCheckpointWritesReuseTheirBuffer(t *testing.T) {
	if raceOn {
		t.Skip("the race detector's sync.Pool drops a share of what is put back, on purpose: no allocation count holds")
	}
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // a collection would empty the pool
	dir := t.TempDir()
	write := func(i int) {
		t.Helper()
		if _, err := writeCheckpoint(filepath.Join(dir, fmt.Sprint(i)), fileHeader{Num: uint64(i) + 1, Size: 1}, nil,
			func(w io.Writer) error { _, err := w.Write([]byte("state")); return err }); err != nil {
			t.Fatal(err)
		}
	}
	write(0)
	const writes = 10
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := 1; i <= writes; i++ {
		write(i)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > writes<<20/4 {
		t.Errorf("%d checkpoint files of a few bytes allocated %d bytes", writes, got)
	}
}
