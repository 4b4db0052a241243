package job

import (
	"encoding/json"
	"reflect"
	"testing"
)

// Fuzz targets for every decoder of untrusted bytes. Their seed corpora run
// in plain `go test`; `go test -fuzz FuzzX ./job` explores further.

func FuzzDecodeNeed(f *testing.F) {
	f.Add([]byte(`{"job":"j1","n":4,"r":2,"req":{"os":"linux","min_memory":1024,"labels":["gpu"]}}`))
	f.Add([]byte(`{"job":"../x","n":1,"r":1,"req":{}}`))
	f.Add([]byte(`{"job":"j","n":100000,"r":16,"req":{}}`))
	f.Add([]byte(`{"job":"j","n":1,"r":1,"req":{},"extra":1}`))
	f.Add([]byte(`{"job":"j","n":2,"r":1,"req":{},"mem_per_proc":1048576,"priority":5}`))
	f.Add([]byte(`{"job":"j","n":2,"r":1,"req":{},"priority":-101}`))
	f.Add([]byte(`{"job":"j","n":2,"r":1,"req":{},"swap_slice":60000000000,"yield_to":"j2","yield_with":["j3","j4"]}`))
	f.Add([]byte(`garbage`))
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := DecodeNeed(b)
		if err != nil {
			return
		}
		if err := n.Validate(); err != nil {
			t.Fatalf("decoded an invalid need: %v", err)
		}
		enc, err := EncodeNeed(n)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		back, err := DecodeNeed(enc)
		if err != nil || !reflect.DeepEqual(back, n) {
			t.Fatalf("round trip: %+v, %v", back, err)
		}
	})
}

func FuzzDecodeDescription(f *testing.F) {
	f.Add([]byte(yamlJob))
	f.Add([]byte(jsonJob))
	f.Add([]byte("executable: a\nnodes: 1\nrequire: {memory: 1.5G}\n"))
	f.Add([]byte("a: &a [*a, *a]\n"))
	f.Add([]byte("{"))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := DecodeDescription(b)
		if err != nil {
			return
		}
		if err := d.Validate(); err != nil {
			t.Fatalf("decoded an invalid description: %v", err)
		}
		enc, err := json.Marshal(d)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		back, err := DecodeDescription(enc)
		if err != nil {
			t.Fatalf("re-decode %s: %v", enc, err)
		}
		if !reflect.DeepEqual(normalize(back), normalize(d)) {
			t.Fatalf("round trip changed it:\n%+v\n%+v", back, d)
		}
	})
}

// normalize maps empty slices and maps to nil, which JSON does not keep
// apart.
func normalize(d Description) Description {
	if len(d.Args) == 0 {
		d.Args = nil
	}
	if len(d.Inputs) == 0 {
		d.Inputs = nil
	}
	if len(d.Outputs) == 0 {
		d.Outputs = nil
	}
	if len(d.Env) == 0 {
		d.Env = nil
	}
	if len(d.Require.Labels) == 0 {
		d.Require.Labels = nil
	}
	return d
}

func FuzzDecodeRecord(f *testing.F) {
	b, err := json.Marshal(sampleRecord(f))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{"id":"j","state":"running","history":[]}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeRecord(b)
		if err != nil {
			return
		}
		if err := r.Check(); err != nil {
			t.Fatalf("decoded a bad record: %v", err)
		}
	})
}

func FuzzParseRequire(f *testing.F) {
	for _, s := range []string{"os=linux,arch=amd64,mem=2G,cores=4,label=gpu", "label=a=b,label=c", "mem=1.5T", ",", "cores=99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRequire(s)
		if err != nil {
			return
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("ParseRequire(%q) gave invalid %+v: %v", s, r, err)
		}
	})
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"2G", "1.5GiB", "0", "1024T", ".5k", "9e9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err != nil {
			return
		}
		if n < 0 || n > MaxSize {
			t.Fatalf("ParseSize(%q) = %d out of range", s, n)
		}
		if back, err := ParseSize(FormatSize(n)); err != nil || back != n {
			t.Fatalf("FormatSize(%d) = %q does not parse back: %d %v", n, FormatSize(n), back, err)
		}
	})
}

func FuzzParseID(f *testing.F) {
	for _, s := range []string{"job-1", "..", "a/b", string(NewID())} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseID(s)
		if err != nil {
			return
		}
		if id == "." || id == ".." || len(id) > MaxIDLen || id[0] == '-' || id[0] == '.' {
			t.Fatalf("ParseID accepted %q", s)
		}
		for _, c := range []byte(id) {
			if c == '/' || c == '\\' || c == 0 {
				t.Fatalf("ParseID accepted %q", s)
			}
		}
	})
}
