package job

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/job/proto"
)

const yamlJob = `
executable: bin/ring
args: [-size, "1024"]
nodes: 16
replicas: 2
strategy: concentrate
require:
  os: linux
  arch: amd64
  cores: 4
  memory: 2G
  labels: [gpu, site=nancy]
prefer: cores
inputs: [data/in.dat]
outputs: [result.txt]
env:
  OMP_NUM_THREADS: 4
stdout: std.out
stderr: std.err
timeout: 90m
deadline: 5m
retries: 0
`

const jsonJob = `{
  "executable": "bin/ring", "args": ["-size", "1024"], "nodes": 16, "replicas": 2,
  "strategy": "concentrate",
  "require": {"os": "linux", "arch": "amd64", "cores": 4, "memory": "2G", "labels": ["gpu", "site=nancy"]},
  "prefer": "cores", "inputs": ["data/in.dat"], "outputs": ["result.txt"],
  "env": {"OMP_NUM_THREADS": "4"}, "stdout": "std.out", "stderr": "std.err",
  "timeout": "90m", "deadline": "5m", "retries": 0
}`

func wantJob() Description {
	return Description{
		Executable: "bin/ring", Args: []string{"-size", "1024"}, Nodes: 16, Replicas: 2,
		Strategy: Concentrate, Prefer: PreferCores,
		Require: proto.Requirements{OS: "linux", Arch: "amd64", MinCores: 4, MinMemory: 2 << 30, Labels: []string{"gpu", "site=nancy"}},
		Inputs:  []string{"data/in.dat"}, Outputs: []string{"result.txt"},
		Env: map[string]string{"OMP_NUM_THREADS": "4"}, Stdout: "std.out", Stderr: "std.err",
		Timeout: 90 * time.Minute, Deadline: 5 * time.Minute, SwapSlice: DefaultSwapSlice,
	}
}

func TestDecodeDescriptionJSONAndYAML(t *testing.T) {
	for name, src := range map[string]string{"yaml": yamlJob, "json": jsonJob} {
		d, err := DecodeDescription([]byte(src))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(d, wantJob()) {
			t.Errorf("%s: got %+v\nwant %+v", name, d, wantJob())
		}
	}
}

func TestDecodeDescriptionDefaults(t *testing.T) {
	d, err := DecodeDescription([]byte("executable: ./a.out\nnodes: 3\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := NewDescription("./a.out", nil, 3)
	if !reflect.DeepEqual(d, want) {
		t.Fatalf("got %+v, want %+v", d, want)
	}
	if d.Replicas != 1 || d.Strategy != Spread || d.Timeout != DefaultTimeout || d.Deadline != DefaultDeadline || d.Retries != DefaultRetries {
		t.Fatalf("defaults not set: %+v", d)
	}
}

func TestDecodeDescriptionStrict(t *testing.T) {
	bad := map[string]string{
		"unknown yaml field":   "executable: a\nnodes: 1\nnodez: 2\n",
		"unknown json field":   `{"executable": "a", "nodes": 1, "colour": "red"}`,
		"unknown require key":  "executable: a\nnodes: 1\nrequire: {disk: 1G}\n",
		"duplicate yaml key":   "executable: a\nnodes: 1\nnodes: 2\n",
		"two yaml documents":   "executable: a\nnodes: 1\n---\nexecutable: b\n",
		"trailing json":        `{"executable": "a", "nodes": 1} {}`,
		"string nodes":         `{"executable": "a", "nodes": "1"}`,
		"duration no unit":     "executable: a\nnodes: 1\ntimeout: 60\n",
		"bad size":             "executable: a\nnodes: 1\nrequire: {memory: lots}\n",
		"empty":                "",
		"not a mapping":        "- a\n- b\n",
		"too big":              "executable: a\nnodes: 1\nargs: [" + strings.Repeat("x,", MaxDescriptionSize/2) + "]\n",
		"invalid after decode": "executable: a\nnodes: 0\n",
	}
	for name, src := range bad {
		_, err := DecodeDescription([]byte(src))
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestValidateNamesTheField(t *testing.T) {
	base := NewDescription("./prog", nil, 4)
	tests := []struct {
		mut  func(d *Description)
		want string
	}{
		{func(d *Description) { d.Nodes = 0 }, "nodes: must be >= 1, got 0"},
		{func(d *Description) { d.Nodes = proto.MaxProcs + 1 }, "nodes: must be <= 100000, got 100001"},
		{func(d *Description) { d.Replicas = 17 }, "replicas: must be <= 16, got 17"},
		{func(d *Description) { d.Replicas = -1 }, "replicas: must be >= 1, got -1"},
		{func(d *Description) { d.Nodes, d.Replicas = 60000, 2 }, "nodes*replicas"},
		{func(d *Description) { d.Retries = -1 }, "retries: must be >= 0, got -1"},
		{func(d *Description) { d.Retries = MaxRetries + 1 }, "retries: must be <= 100"},
		{func(d *Description) { d.Executable = "" }, "executable: required"},
		{func(d *Description) { d.Args = []string{"a\x00"} }, "args[0]"},
		{func(d *Description) { d.Args = make([]string, MaxArgs+1) }, "args: at most"},
		{func(d *Description) { d.Strategy = "pack" }, "strategy:"},
		{func(d *Description) { d.Prefer = "fast" }, "prefer:"},
		{func(d *Description) { d.Require.OS = "Linux!" }, "require: os"},
		{func(d *Description) { d.Inputs = []string{"a/x", "b/x"} }, "inputs[1]"},
		{func(d *Description) { d.Inputs = []string{"other/prog"} }, "like executable"},
		{func(d *Description) { d.Outputs = []string{"../escape"} }, "outputs[0]"},
		{func(d *Description) { d.Outputs = []string{"/abs"} }, "outputs[0]"},
		{func(d *Description) { d.Outputs = []string{"r", "./r"} }, "outputs[1]: \"./r\" listed twice"},
		{func(d *Description) { d.Env = map[string]string{"ZORILLA_RANK": "1"} }, "env: name \"ZORILLA_RANK\""},
		{func(d *Description) { d.Stdout = "../out" }, "stdout:"},
		{func(d *Description) { d.Stderr = d.Stdout }, "stderr:"},
		{func(d *Description) { d.Timeout = -time.Second }, "timeout:"},
		{func(d *Description) { d.Timeout = proto.MaxTimeout + 1 }, "timeout:"},
		{func(d *Description) { d.Deadline = time.Millisecond }, "deadline:"},
	}
	if err := base.Validate(); err != nil {
		t.Fatalf("base: %v", err)
	}
	for _, tt := range tests {
		d := NewDescription("./prog", nil, 4)
		tt.mut(&d)
		err := d.Validate()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Validate = %v, want %q", err, tt.want)
		}
	}
}

func TestLoadDescriptionResolvesPaths(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(path, []byte(yamlJob), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := LoadDescription(path)
	if err != nil {
		t.Fatal(err)
	}
	if d.Executable != filepath.Join(dir, "bin/ring") || d.Inputs[0] != filepath.Join(dir, "data/in.dat") {
		t.Fatalf("paths not resolved: %q %q", d.Executable, d.Inputs)
	}
	if d.Outputs[0] != "result.txt" {
		t.Fatalf("outputs must stay relative to the job folder: %q", d.Outputs)
	}
	if _, err := LoadDescription(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Fatal("missing file accepted")
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"executable": "a", "nodes": 0}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadDescription(bad); err == nil || !strings.Contains(err.Error(), "bad.json") ||
		!strings.Contains(err.Error(), "nodes: must be >= 1, got 0") {
		t.Fatalf("error %v should name the file and the field", err)
	}
}

func TestDescriptionJSONRoundTrip(t *testing.T) {
	d := wantJob()
	b, err := d.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"memory":"2G"`) || !strings.Contains(string(b), `"timeout":"1h30m0s"`) {
		t.Errorf("record form not readable: %s", b)
	}
	var back Description
	if err := back.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, d) {
		t.Fatalf("round trip changed it:\n%+v\n%+v", back, d)
	}
	n := d.Need("j1")
	if n.N != 16 || n.R != 2 || n.Job != "j1" || n.Req.MinMemory != 2<<30 {
		t.Fatalf("Need = %+v", n)
	}
	if err := n.Validate(); err != nil {
		t.Fatal(err)
	}
}
