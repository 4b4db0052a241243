package job

import (
	"encoding/json"
	"reflect"
	"testing"
)

// Fuzz targets for every decoder of untrusted bytes. Their seed corpora run
// in plain `go test`; `go test -fuzz FuzzX ./job` explores further.

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
