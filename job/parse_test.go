package job

import (
	"reflect"
	"strings"
	"testing"

	"github.com/zorilla-p2p/zorilla/job/proto"
)

func TestParseRequire(t *testing.T) {
	got, err := ParseRequire("os=linux,arch=amd64,mem=2G,cores=4,label=gpu,label=site=nancy")
	want := proto.Requirements{OS: "linux", Arch: "amd64", MinMemory: 2 << 30, MinCores: 4, Labels: []string{"gpu", "site=nancy"}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseRequire = %+v, %v; want %+v", got, err, want)
	}
	if got, err := ParseRequire(""); err != nil || !reflect.DeepEqual(got, proto.Requirements{}) {
		t.Fatalf("ParseRequire(\"\") = %+v, %v", got, err)
	}
	bad := map[string]string{
		"os=linux,os=darwin": "os given twice",
		"gpu":                `"gpu" is not key=value`,
		"cores=four":         "cores",
		"cores=-1":           "cores: must be 0..",
		"mem=lots":           "mem",
		"disk=1G":            `unknown key "disk"`,
		"os=Linux":           "os",
		"label=a b":          "label",
		"os=":                "not key=value",
	}
	for in, msg := range bad {
		if _, err := ParseRequire(in); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseRequire(%q) error = %v, want it to mention %q", in, err, msg)
		}
	}
}

func TestParseEnv(t *testing.T) {
	if k, v, err := ParseEnv("OMP_NUM_THREADS=4"); err != nil || k != "OMP_NUM_THREADS" || v != "4" {
		t.Fatalf("ParseEnv = %q %q %v", k, v, err)
	}
	if k, v, err := ParseEnv("A=b=c"); err != nil || k != "A" || v != "b=c" {
		t.Fatalf("ParseEnv(A=b=c) = %q %q %v", k, v, err)
	}
	if _, v, err := ParseEnv("EMPTY="); err != nil || v != "" {
		t.Fatalf("ParseEnv(EMPTY=) = %q %v", v, err)
	}
	for _, bad := range []string{"NOVALUE", "=x", "1A=x", "A-B=x", "ZORILLA_RANK=3", "zorilla_key=x", "A=\x00"} {
		if _, _, err := ParseEnv(bad); err == nil {
			t.Errorf("ParseEnv(%q) accepted", bad)
		}
	}
}
