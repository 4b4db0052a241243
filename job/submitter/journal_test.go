package submitter

import (
	"os"
	"path/filepath"
	"testing"
)

// TestJournalReplay: after a crash, the files of the job folder are cut
// back to their size at the last record (what was written after it was
// not journaled, so the worker sends it again), the last report of each
// host attempt is known, and a torn last line is ignored.
func TestJournalReplay(t *testing.T) {
	dir := t.TempDir()
	j, err := openJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	write := func(file, s string) int64 {
		path := filepath.Join(dir, file)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
		return j.wrote(dir, file, len(s))
	}
	for i, r := range []journalRecord{
		{Lease: "a", Seq: 1, File: "stdout", Size: write("stdout", "[0] one\n")},
		{Lease: "b", Seq: 1, File: "stdout", Size: write("stdout", "[1] one\n")},
		{Lease: "a", Seq: 2},
		{Lease: "a", Seq: 3, File: "output/r.txt", Size: write("output/r.txt", "chunk")},
		{Lease: "b", Seq: 2, Done: true},
	} {
		if err := j.record(r); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	// The crash: a line and a chunk written, their records never.
	write("stdout", "[0] two\n")
	write("output/r.txt", "more")
	if _, err := j.f.WriteString(`{"l":"a","s":4,"f":"std`); err != nil {
		t.Fatal(err)
	}
	_ = j.close()

	st, err := replayJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.seq["a"] != 3 || st.seq["b"] != 2 || st.done["a"] || !st.done["b"] {
		t.Errorf("replay: seq %v done %v, want a=3 b=2 done, b only", st.seq, st.done)
	}
	for file, want := range map[string]string{"stdout": "[0] one\n[1] one\n", "output/r.txt": "chunk"} {
		if b, err := os.ReadFile(filepath.Join(dir, file)); err != nil || string(b) != want {
			t.Errorf("%s after replay: %q (%v), want %q", file, b, err, want)
		}
	}
	if st, err := replayJournal(t.TempDir()); err != nil || len(st.seq) != 0 {
		t.Errorf("no journal: %v, %v", st, err)
	}
}
