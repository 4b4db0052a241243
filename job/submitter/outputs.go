package submitter

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/zorilla-p2p/zorilla/job"
)

// ErrNoOutput is returned for an output file a job does not have.
var ErrNoOutput = errors.New("job: no such output file")

// OutputFile is an output file a job brought back to its submitter's job
// folder, named by OutputName.
type OutputFile struct {
	Name string `json:"name"`
	Size int64  `json:"size"`
}

// Outputs lists the output files of job id held in its job folder.
func (s *Submitter) Outputs(id job.ID) ([]OutputFile, error) {
	if _, err := s.Get(id); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(filepath.Join(s.store.Dir(id), "output"))
	if errors.Is(err, os.ErrNotExist) {
		return []OutputFile{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("outputs of %s: %w", id, err)
	}
	out := []OutputFile{}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		out = append(out, OutputFile{Name: e.Name(), Size: info.Size()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// OpenOutput opens one output file of job id for reading.
func (s *Submitter) OpenOutput(id job.ID, name string) (*os.File, error) {
	if _, err := s.Get(id); err != nil {
		return nil, err
	}
	if err := job.PlainFileName(name); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoOutput, err)
	}
	f, err := os.Open(filepath.Join(s.store.Dir(id), "output", name))
	if err != nil {
		return nil, fmt.Errorf("%w: %s of job %s", ErrNoOutput, name, id)
	}
	return f, nil
}
