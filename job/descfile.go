package job

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/zorilla-p2p/zorilla/internal/wire"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// MaxDescriptionSize bounds a job file.
const MaxDescriptionSize = 1 << 20

// descFile is the job file format, shared by JSON and YAML, and the form a
// Description takes inside a job record. Sizes read "2G", durations "90m".
type descFile struct {
	Executable string            `json:"executable" yaml:"executable"`
	Args       []string          `json:"args,omitempty" yaml:"args,omitempty"`
	Nodes      fileProcs         `json:"nodes" yaml:"nodes"`
	Replicas   int               `json:"replicas,omitempty" yaml:"replicas,omitempty"`
	PMI        bool              `json:"pmi,omitempty" yaml:"pmi,omitempty"`
	Strategy   Strategy          `json:"strategy,omitempty" yaml:"strategy,omitempty"`
	Require    fileRequire       `json:"require,omitzero" yaml:"require,omitempty"`
	Prefer     Preference        `json:"prefer,omitempty" yaml:"prefer,omitempty"`
	Inputs     []string          `json:"inputs,omitempty" yaml:"inputs,omitempty"`
	Outputs    []string          `json:"outputs,omitempty" yaml:"outputs,omitempty"`
	Env        map[string]string `json:"env,omitempty" yaml:"env,omitempty"`
	Stdout     string            `json:"stdout,omitempty" yaml:"stdout,omitempty"`
	Stderr     string            `json:"stderr,omitempty" yaml:"stderr,omitempty"`
	Timeout    fileDuration      `json:"timeout,omitzero" yaml:"timeout,omitempty"`
	Deadline   fileDuration      `json:"deadline,omitzero" yaml:"deadline,omitempty"`
	Retries    *int              `json:"retries,omitempty" yaml:"retries,omitempty"` // absent: DefaultRetries

	CheckpointEvery fileDuration  `json:"checkpoint_every,omitzero" yaml:"checkpoint_every,omitempty"`
	MemPerProc      fileSize      `json:"mem_per_proc,omitzero" yaml:"mem_per_proc,omitempty"`
	Priority        int           `json:"priority,omitempty" yaml:"priority,omitempty"`
	SwapSlice       *fileDuration `json:"swap_slice,omitempty" yaml:"swap_slice,omitempty"` // absent: DefaultSwapSlice
	ResizeEvery     fileDuration  `json:"resize_every,omitzero" yaml:"resize_every,omitempty"`
}

type fileRequire struct {
	OS     string   `json:"os,omitempty" yaml:"os,omitempty"`
	Arch   string   `json:"arch,omitempty" yaml:"arch,omitempty"`
	Cores  int      `json:"cores,omitempty" yaml:"cores,omitempty"`
	Memory fileSize `json:"memory,omitzero" yaml:"memory,omitempty"`
	Labels []string `json:"labels,omitempty" yaml:"labels,omitempty"`
}

func (d Description) toFile() descFile {
	return descFile{
		Executable: d.Executable, Args: d.Args, Nodes: fileProcs{d.MinNodes, d.Nodes}, Replicas: d.Replicas, PMI: d.PMI,
		Strategy: d.Strategy, Prefer: d.Prefer, Inputs: d.Inputs, Outputs: d.Outputs, Env: d.Env,
		Stdout: d.Stdout, Stderr: d.Stderr, Timeout: fileDuration(d.Timeout), Deadline: fileDuration(d.Deadline),
		ResizeEvery: fileDuration(d.ResizeEvery), Retries: &d.Retries, CheckpointEvery: fileDuration(d.CheckpointEvery),
		MemPerProc: fileSize(d.MemPerProc), Priority: d.Priority, SwapSlice: (*fileDuration)(&d.SwapSlice),
		Require: fileRequire{OS: d.Require.OS, Arch: d.Require.Arch, Cores: d.Require.MinCores,
			Memory: fileSize(d.Require.MinMemory), Labels: d.Require.Labels},
	}
}

func (f descFile) description() Description {
	retries := DefaultRetries
	if f.Retries != nil {
		retries = *f.Retries
	}
	swap := DefaultSwapSlice
	if f.SwapSlice != nil {
		swap = time.Duration(*f.SwapSlice)
	}
	return Description{Retries: retries, CheckpointEvery: time.Duration(f.CheckpointEvery),
		MemPerProc: int64(f.MemPerProc), Priority: f.Priority, SwapSlice: swap,
		Executable: f.Executable, Args: f.Args, Nodes: f.Nodes.hi, MinNodes: f.Nodes.lo, ResizeEvery: time.Duration(f.ResizeEvery),
		Replicas: f.Replicas, PMI: f.PMI,
		Strategy: f.Strategy, Prefer: f.Prefer, Inputs: f.Inputs, Outputs: f.Outputs, Env: f.Env,
		Stdout: f.Stdout, Stderr: f.Stderr, Timeout: time.Duration(f.Timeout), Deadline: time.Duration(f.Deadline),
		Require: proto.Requirements{OS: f.Require.OS, Arch: f.Require.Arch, MinCores: f.Require.Cores,
			MinMemory: int64(f.Require.Memory), Labels: f.Require.Labels},
	}
}

// MarshalJSON writes the job file form.
func (d Description) MarshalJSON() ([]byte, error) { return json.Marshal(d.toFile()) }

// UnmarshalJSON reads the job file form strictly (unknown fields refused).
// It does not validate; Validate does.
func (d *Description) UnmarshalJSON(b []byte) error {
	var f descFile
	if err := wire.DecodeJSON(b, &f); err != nil {
		return err
	}
	*d = f.description()
	return nil
}

// DecodeDescription reads a job file's bytes, JSON when it starts with '{'
// and YAML otherwise, strictly: unknown fields, duplicate keys, trailing
// documents and values of the wrong type are refused. Defaults are set and
// the result is validated.
func DecodeDescription(b []byte) (Description, error) {
	if len(b) > MaxDescriptionSize {
		return Description{}, fmt.Errorf("job file: %d bytes, limit %d", len(b), MaxDescriptionSize)
	}
	var f descFile
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '{' {
		if err := decodeJSONFile(b, &f); err != nil {
			return Description{}, fmt.Errorf("job file: %w", jsonFileError(err, b, indexFile(b)))
		}
	} else if err := decodeYAML(b, &f); err != nil {
		return Description{}, fmt.Errorf("job file: %w", yamlFileError(err, indexFile(b)))
	}
	d := f.description()
	d.SetDefaults()
	if err := d.Validate(); err != nil {
		return Description{}, fmt.Errorf("job file: %w", atLine(err, indexFile(b)))
	}
	return d, nil
}

// decodeJSONFile reads one JSON object, refusing unknown fields and
// anything after it.
func decodeJSONFile(b []byte, f *descFile) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(f); err != nil {
		return err
	}
	if dec.More() {
		return &valueError{lineAt(b, dec.InputOffset()), "", errors.New("more after the closing } of the job")}
	}
	return nil
}

func decodeYAML(b []byte, v any) error {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return errors.New("the file is empty: it needs executable: and nodes: at least")
		}
		return err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return errors.New("more than one YAML document (a line \"---\" starts another)")
	}
	return nil
}

// LoadDescription reads and validates a job file (JSON or YAML). Relative
// executable and input paths are taken relative to the file's folder, so a
// job folder can be moved as a whole.
func LoadDescription(path string) (Description, error) {
	f, err := os.Open(path)
	if err != nil {
		return Description{}, fmt.Errorf("load job file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxDescriptionSize+1))
	if err != nil {
		return Description{}, fmt.Errorf("load job file %s: %w", path, err)
	}
	d, err := DecodeDescription(b)
	if err != nil {
		return Description{}, fmt.Errorf("%s: %w", path, err)
	}
	dir := filepath.Dir(path)
	if !filepath.IsAbs(d.Executable) {
		d.Executable = filepath.Join(dir, d.Executable)
	}
	for i, in := range d.Inputs {
		if !filepath.IsAbs(in) {
			d.Inputs[i] = filepath.Join(dir, in)
		}
	}
	return d, nil
}

// fileSize is a byte count written "2G" or as a plain number.
type fileSize int64

func (s fileSize) MarshalJSON() ([]byte, error) { return json.Marshal(proto.FormatSize(int64(s))) }

func (s *fileSize) UnmarshalJSON(b []byte) error {
	text := string(b)
	if strings.HasPrefix(text, `"`) {
		if err := json.Unmarshal(b, &text); err != nil {
			return err
		}
	}
	n, err := proto.ParseSize(text)
	*s = fileSize(n)
	return err
}

func (s *fileSize) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return &valueError{n.Line, "", errors.New("want a size such as 2G")}
	}
	v, err := proto.ParseSize(n.Value)
	*s = fileSize(v)
	if err != nil {
		return &valueError{n.Line, n.Value, err}
	}
	return nil
}

// fileProcs is a job's size: a number (a rigid job) or "MIN:MAX" (a
// malleable one, ParseProcs).
type fileProcs struct{ lo, hi int }

func (p fileProcs) MarshalJSON() ([]byte, error) {
	if p.lo > 0 {
		return json.Marshal(fmt.Sprintf("%d:%d", p.lo, p.hi))
	}
	return json.Marshal(p.hi)
}

func (p *fileProcs) UnmarshalJSON(b []byte) error {
	var n int
	if err := json.Unmarshal(b, &n); err == nil {
		*p = fileProcs{hi: n}
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil || !strings.Contains(s, ":") {
		return fmt.Errorf("want a whole number or MIN:MAX such as \"2:8\", got %s", b)
	}
	lo, hi, err := ParseProcs(s)
	*p = fileProcs{lo, hi}
	return err
}

func (p *fileProcs) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" && !strings.Contains(n.Value, ":") {
		return &valueError{n.Line, n.Value, fmt.Errorf("want a whole number or MIN:MAX such as 2:8, got %q", n.Value)}
	}
	lo, hi, err := ParseProcs(n.Value)
	if err != nil {
		return &valueError{n.Line, n.Value, err}
	}
	*p = fileProcs{lo, hi}
	return nil
}

// fileDuration is a duration written as Go writes them: "90s", "1h30m".
type fileDuration time.Duration

func (d fileDuration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

func (d *fileDuration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string such as \"90m\": %w", err)
	}
	return d.parse(s)
}

func (d *fileDuration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return &valueError{n.Line, "", errors.New("want a duration such as 90m")}
	}
	if err := d.parse(n.Value); err != nil {
		return &valueError{n.Line, n.Value, err}
	}
	return nil
}

func (d *fileDuration) parse(s string) error {
	v, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		if _, nerr := strconv.Atoi(s); nerr == nil {
			return fmt.Errorf("duration %q needs a unit, such as %ss", s, s)
		}
		return fmt.Errorf("duration %q: %w", s, err)
	}
	*d = fileDuration(v)
	return nil
}
