package job

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Bad job files, YAML and JSON, get one line that names the line and the
// field as the file writes it, in the file's terms: no Go type, no
// decoder's name.
func TestJobFileErrors(t *testing.T) {
	for _, tc := range []struct {
		name, file, want string
	}{
		{"yaml: text for a number", "executable: ./a\nnodes: four\n",
			`job file: line 2: nodes: want a whole number or MIN:MAX such as 2:8, got "four"`},
		{"yaml: unknown field", "executable: ./a\nnodez: 4\n",
			`job file: line 2: unknown field "nodez"`},
		{"yaml: unknown field in require", "executable: ./a\nnodes: 4\nrequire:\n  os: linux\n  gpu: 1\n",
			`job file: line 5: unknown field "gpu" in require`},
		{"yaml: bad size", "executable: ./a\nnodes: 4\nrequire:\n  memory: lots\n",
			`job file: line 4: require.memory: size "lots": want a number with an optional unit K, M, G or T`},
		{"yaml: size as a list", "executable: ./a\nnodes: 4\nrequire:\n  memory: [2G]\n",
			`job file: line 4: require.memory: want a size such as 2G`},
		{"yaml: duration without unit", "executable: ./a\nnodes: 4\ntimeout: 90\n",
			`job file: line 3: timeout: duration "90" needs a unit, such as 90s`},
		{"yaml: text for a list", "executable: ./a\nnodes: 4\nargs: x\n",
			`job file: line 3: args: want a list of strings, got "x"`},
		{"yaml: list for text", "executable: [./a]\nnodes: 4\n",
			`job file: line 1: executable: want a string, got a list`},
		{"yaml: list item of the wrong kind", "executable: ./a\nnodes: 4\ninputs:\n  - a.txt\n  - {b: 1}\n",
			`job file: line 5: inputs[1]: want a string, got a map`},
		{"yaml: field twice", "executable: ./a\nnodes: 4\nnodes: 5\n",
			`job file: line 3: field "nodes" given twice (first at line 2)`},
		{"yaml: bad indentation", "executable: ./a\n  nodes: 4\n",
			`job file: line 2: not valid YAML: mapping values are not allowed in this context`},
		{"yaml: a list, not a job", "- executable: ./a\n",
			`job file: line 1: want a map of the job's fields (executable, nodes...), got a list`},
		{"yaml: two documents", "executable: ./a\nnodes: 4\n---\nnodes: 5\n",
			`job file: more than one YAML document (a line "---" starts another)`},
		{"empty", "\n",
			`job file: the file is empty: it needs executable: and nodes: at least`},
		{"yaml: out of range", "executable: ./a\nnodes: 0\n",
			`job file: line 2: nodes: must be >= 1, got 0`},
		{"yaml: bad choice", "executable: ./a\nnodes: 4\nstrategy: round\n",
			`job file: line 3: strategy: must be "spread" or "concentrate", got "round"`},
		{"yaml: bad memory", "executable: ./a\nnodes: 4\nrequire:\n  memory: 99999T\n",
			`job file: line 4: require.memory: size "99999T": more than the limit of 1125899906842624 bytes`},
		{"json: text for a number", `{"executable": "./a", "nodes": "four"}`,
			`job file: line 1: nodes: want a whole number or MIN:MAX such as 2:8, got "four"`},
		{"json: unknown field", "{\"executable\": \"./a\",\n \"nodez\": 4}",
			`job file: line 2: unknown field "nodez"`},
		{"json: bad size", "{\"executable\": \"./a\",\n \"nodes\": 4,\n \"require\": {\"memory\": \"lots\"}}",
			`job file: line 3: require.memory: size "lots": want a number with an optional unit K, M, G or T`},
		{"json: duration as a number", "{\"executable\": \"./a\",\n \"nodes\": 4,\n \"timeout\": 90}",
			`job file: line 3: timeout: duration "90" needs a unit, such as 90s`},
		{"json: trailing comma", "{\"executable\": \"./a\",\n \"nodes\": 4,}",
			`job file: line 2: not valid JSON: invalid character '}' looking for beginning of object key string`},
		{"json: more after the job", "{\"executable\": \"./a\",\n \"nodes\": 4}\n{}",
			`job file: line 3: more after the closing } of the job`},
		{"json: bad choice", "{\"executable\": \"./a\",\n \"nodes\": 4, \"strategy\": \"round\"}",
			`job file: line 2: strategy: must be "spread" or "concentrate", got "round"`},
		{"json: out of range in require", "{\"executable\": \"./a\", \"nodes\": 4,\n \"require\": {\"cores\": -1}}",
			`job file: line 2: require: cores: must be 0..65536, got -1`},
	} {
		_, err := DecodeDescription([]byte(tc.file))
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		if err.Error() != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, err, tc.want)
		}
		for _, internal := range []string{"job.", "wire", "descFile", "unmarshal", "Go ", "!!"} {
			if strings.Contains(err.Error(), internal) {
				t.Errorf("%s: %q shows %q", tc.name, err, internal)
			}
		}
	}
}

// LoadDescription names the file before the line.
func TestLoadDescriptionErrorNamesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "job.yaml")
	if err := os.WriteFile(path, []byte("executable: ./a\nnodes: four\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadDescription(path)
	if want := path + `: job file: line 2: nodes: want a whole number or MIN:MAX such as 2:8, got "four"`; err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

// Whatever a job file holds, its error is one line with no Go internals.
func FuzzJobFileErrors(f *testing.F) {
	f.Add([]byte("executable: ./a\nnodes: four\n"))
	f.Add([]byte("{\"executable\": \"./a\",\n \"nodes\": 4,\n \"require\": {\"memory\": \"lots\"}}"))
	f.Add([]byte("- a\n- {b: [1, 2]}\n"))
	f.Add([]byte("executable: ./a\nnodes: 1\nrequire: {memory: [1], cores: x}\nenv: [1]\n"))
	f.Add([]byte(`{"nodes": {"a": 1}, "args": "x"} 1`))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, err := DecodeDescription(b)
		if err == nil {
			return
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, "job file: ") || strings.Contains(msg, "descFile") || strings.Contains(msg, "wire: ") {
			t.Fatalf("error %q", msg)
		}
		if strings.Contains(msg, "\n") {
			t.Fatalf("error on more than one line: %q", msg)
		}
	})
}
