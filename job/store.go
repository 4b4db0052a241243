package job

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	logging "github.com/ipfs/go-log/v2"

	"github.com/zorilla-p2p/zorilla/internal/atomicfile"
	"github.com/zorilla-p2p/zorilla/internal/wire"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

var log = logging.Logger("zorilla/job")

// ErrNotFound is returned by Store.Get for a job it has no record of.
var ErrNotFound = errors.New("job: no such job")

// MaxRecordSize bounds a record file; a plan for MaxProcs processes fits.
const MaxRecordSize = 32 << 20

// recordFile is the name of a record inside its job folder.
const recordFile = "record.json"

// Store keeps job records on disk, one folder per job:
// <data-dir>/jobs/<id>/record.json. Writes are atomic (a temporary file
// renamed over the record), so a crash leaves the old record or the new,
// never half of one. A Store holds no state in memory and is safe for
// concurrent use; concurrent Puts of one job leave one of them.
type Store struct {
	dir string
}

// OpenStore opens (creating if needed) the jobs folder under dataDir.
func OpenStore(dataDir string) (*Store, error) {
	dir := filepath.Join(dataDir, "jobs")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("open job store: %w", err)
	}
	return &Store{dir: dir}, nil
}

// Dir returns the job's folder, where its record, captured output and
// returned files live. The ID must have passed ParseID.
func (s *Store) Dir(id ID) string { return filepath.Join(s.dir, string(id)) }

// Put writes a record after checking it, replacing any previous one.
func (s *Store) Put(r Record) error {
	if err := r.Check(); err != nil {
		return fmt.Errorf("put job record: %w", err)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("put job %s: %w", r.ID, err)
	}
	if len(b) > MaxRecordSize {
		return fmt.Errorf("put job %s: record of %d bytes exceeds %d", r.ID, len(b), MaxRecordSize)
	}
	dir := s.Dir(r.ID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("put job %s: %w", r.ID, err)
	}
	if err := atomicfile.Write(filepath.Join(dir, recordFile), b); err != nil {
		return fmt.Errorf("put job %s: %w", r.ID, err)
	}
	return nil
}

// Get reads one job's record. A job never stored gives ErrNotFound.
func (s *Store) Get(id ID) (Record, error) {
	if _, err := proto.ParseJobID(string(id)); err != nil {
		return Record{}, fmt.Errorf("get job: %w", err)
	}
	r, err := readRecord(filepath.Join(s.Dir(id), recordFile))
	if errors.Is(err, fs.ErrNotExist) {
		return Record{}, fmt.Errorf("get job %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Record{}, fmt.Errorf("get job %s: %w", id, err)
	}
	if r.ID != id {
		return Record{}, fmt.Errorf("get job %s: record names job %s", id, r.ID)
	}
	return r, nil
}

// List reads every record, oldest first. A record that cannot be read or
// does not parse is reported in problems (naming its folder) and skipped;
// it never hides the others.
func (s *Store) List() (records []Record, problems []error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, []error{fmt.Errorf("list jobs: %w", err)}
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		r, err := s.Get(ID(e.Name()))
		if err != nil {
			log.Debugf("skipping job folder %s: %v", e.Name(), err)
			problems = append(problems, fmt.Errorf("job folder %s: %w", e.Name(), err))
			continue
		}
		records = append(records, r)
	}
	sort.Slice(records, func(i, j int) bool {
		if !records[i].Created.Equal(records[j].Created) {
			return records[i].Created.Before(records[j].Created)
		}
		return records[i].ID < records[j].ID
	})
	return records, problems
}

// Delete removes a job's folder and everything in it.
func (s *Store) Delete(id ID) error {
	if _, err := proto.ParseJobID(string(id)); err != nil {
		return fmt.Errorf("delete job: %w", err)
	}
	if err := os.RemoveAll(s.Dir(id)); err != nil {
		return fmt.Errorf("delete job %s: %w", id, err)
	}
	return nil
}

func readRecord(path string) (Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return Record{}, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxRecordSize+1))
	if err != nil {
		return Record{}, err
	}
	return DecodeRecord(b)
}

// DecodeRecord parses and checks a record's bytes, strictly.
func DecodeRecord(b []byte) (Record, error) {
	var r Record
	if len(b) > MaxRecordSize {
		return r, fmt.Errorf("record of %d bytes exceeds %d", len(b), MaxRecordSize)
	}
	if err := wire.DecodeJSON(b, &r); err != nil {
		return Record{}, err
	}
	if err := r.Check(); err != nil {
		return Record{}, err
	}
	return r, nil
}
