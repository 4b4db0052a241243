package submitter

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// journalName is the journal's file in the job folder.
const journalName = "reports.journal"

// maxJournalLine bounds one journal record on reading.
const maxJournalLine = 16 << 10

// journal records, for each report the session took, which host attempt
// sent it (its lease), its number, and the size of the job-folder file it
// wrote to, in one append per report. After the submitter's agent crashed,
// the journal says which reports it holds, so the workers send again only
// the later ones, and where each file of the job folder ends: what was
// written after the last record is cut off, so nothing is written twice.
type journal struct {
	f     *os.File
	sizes map[string]int64 // file (relative to the job folder) -> its size
}

// journalRecord is one line of the journal.
type journalRecord struct {
	Lease string `json:"l"`
	Seq   uint64 `json:"s"`
	Done  bool   `json:"d,omitempty"` // the report was RepDone: the host is done
	Ready bool   `json:"r,omitempty"` // the report was RepReady: the host's copies are in Init
	File  string `json:"f,omitempty"`
	Size  int64  `json:"z,omitempty"`
}

// openJournal opens (or creates) the journal of the job folder dir.
func openJournal(dir string) (*journal, error) {
	f, err := os.OpenFile(filepath.Join(dir, journalName), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("report journal: %w", err)
	}
	return &journal{f: f, sizes: map[string]int64{}}, nil
}

// wrote notes that n bytes were appended to file (relative to the job
// folder), whose size is then returned.
func (j *journal) wrote(dir, file string, n int) int64 {
	size, ok := j.sizes[file]
	if !ok {
		if st, err := os.Stat(filepath.Join(dir, file)); err == nil {
			size = st.Size() - int64(n)
		}
	}
	j.sizes[file] = size + int64(n)
	return j.sizes[file]
}

// forget drops what the journal knows of files under prefix (removed).
func (j *journal) forget(prefix string) {
	for f := range j.sizes {
		if rel, err := filepath.Rel(prefix, f); err == nil && filepath.IsLocal(rel) {
			delete(j.sizes, f)
		}
	}
}

// record appends one record in one write.
func (j *journal) record(r journalRecord) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = j.f.Write(append(b, '\n'))
	return err
}

func (j *journal) close() error { return j.f.Close() }

// journalState is what a journal says after a crash.
type journalState struct {
	seq   map[string]uint64 // lease -> the last report taken
	done  map[string]bool   // lease -> its host sent RepDone
	ready map[string]bool   // lease -> its host sent RepReady
}

// replayJournal reads the journal of job folder dir and cuts every file it
// names back to the size of its last record. A torn last line (the crash
// came mid-write) is ignored, as is a journal that does not exist.
func replayJournal(dir string) (journalState, error) {
	st := journalState{seq: map[string]uint64{}, done: map[string]bool{}, ready: map[string]bool{}}
	f, err := os.Open(filepath.Join(dir, journalName))
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("report journal: %w", err)
	}
	defer f.Close()
	sizes := map[string]int64{}
	br := bufio.NewReaderSize(f, maxJournalLine)
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, bufio.ErrBufferFull) {
				break
			}
			return st, fmt.Errorf("report journal: %w", err)
		}
		var r journalRecord
		if json.Unmarshal(line, &r) != nil {
			continue
		}
		st.seq[r.Lease] = max(st.seq[r.Lease], r.Seq)
		st.done[r.Lease] = st.done[r.Lease] || r.Done
		st.ready[r.Lease] = st.ready[r.Lease] || r.Ready
		if r.File != "" && filepath.IsLocal(r.File) {
			sizes[r.File] = r.Size
		}
	}
	for file, size := range sizes {
		path := filepath.Join(dir, file)
		if fi, err := os.Stat(path); err == nil && fi.Size() > size {
			if err := os.Truncate(path, size); err != nil {
				return st, fmt.Errorf("report journal: cut %s back: %w", file, err)
			}
		}
	}
	return st, nil
}
