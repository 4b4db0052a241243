package job

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		err  bool
	}{
		{"0", 0, false},
		{"4096", 4096, false},
		{"2G", 2 << 30, false},
		{"2g", 2 << 30, false},
		{"2GB", 2 << 30, false},
		{"2GiB", 2 << 30, false},
		{"512M", 512 << 20, false},
		{" 1.5G ", 3 << 29, false},
		{"1K", 1024, false},
		{"1T", 1 << 40, false},
		{"1024T", 1 << 50, false},
		{"1025T", 0, true},
		{"", 0, true},
		{"G", 0, true},
		{"-1G", 0, true},
		{"2X", 0, true},
		{"1e9", 0, true},
		{"1..2G", 0, true},
		{"99999999999999999999999999999999", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, err=%v", tt.in, got, err, tt.want, tt.err)
		}
	}
	for _, n := range []int64{0, 1, 1000, 1024, 3 << 29, 2 << 30, 5 << 40} {
		if got, err := ParseSize(FormatSize(n)); err != nil || got != n {
			t.Errorf("round trip %d via %q = %d, %v", n, FormatSize(n), got, err)
		}
	}
}

func TestParseRequire(t *testing.T) {
	got, err := ParseRequire("os=linux,arch=amd64,mem=2G,cores=4,label=gpu,label=site=nancy")
	want := Requirements{OS: "linux", Arch: "amd64", MinMemory: 2 << 30, MinCores: 4, Labels: []string{"gpu", "site=nancy"}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseRequire = %+v, %v; want %+v", got, err, want)
	}
	if got, err := ParseRequire(""); err != nil || !reflect.DeepEqual(got, Requirements{}) {
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
