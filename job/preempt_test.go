package job

import (
	"strings"
	"testing"
)

func TestDecodePreemptMsg(t *testing.T) {
	cases := []struct {
		in, err string
	}{
		{`{"job":"j1","lease":"k","for":"j2","priority":5}`, ""},
		{`{"job":"../x","lease":"k","for":"j2","priority":5}`, "preempt: job"},
		{`{"job":"j1","lease":"","for":"j2","priority":5}`, "preempt: lease"},
		{`{"job":"j1","lease":"` + strings.Repeat("k", 65) + `","for":"j2"}`, "preempt: lease"},
		{`{"job":"j1","lease":"k","for":"","priority":5}`, "preempt: for"},
		{`{"job":"j1","lease":"k","for":"j2","priority":500}`, "priority: must be"},
		{`{"job":"j1","lease":"k","for":"j2","extra":1}`, "unknown field"},
		{`{"job":"j1","lease":"k","for":"j2","priority":0,"with":["j3","j4"]}`, ""},
		{`{"job":"j1","lease":"k","for":"j2","with":["j3",""]}`, "preempt: with: job id"},
		{`{"job":"j1","lease":"k","for":"j2","with":[` + strings.Repeat(`"j3",`, MaxYieldWith) + `"j3"]}`, "preempt: with: 17 jobs"},
		{strings.Repeat(" ", MaxPreemptSize+1), "exceed"},
	}
	for _, c := range cases {
		_, err := DecodePreemptMsg([]byte(c.in))
		if (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Errorf("%.60s: %v, want %q", c.in, err, c.err)
		}
	}
}

func FuzzDecodePreemptMsg(f *testing.F) {
	f.Add([]byte(`{"job":"j1","lease":"k","for":"j2","priority":5}`))
	f.Add([]byte(`{"job":"j1","lease":"k","for":"j2","priority":-101}`))
	f.Add([]byte(`{"job":"j1","lease":"k","for":"j2","with":["j3","j4"]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodePreemptMsg(b)
		if err == nil && m.Validate() != nil {
			t.Fatalf("decoded an invalid message %+v", m)
		}
	})
}
