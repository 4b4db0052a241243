package proc

import (
	"errors"
	"io/fs"
	"strings"
	"syscall"
	"testing"
)

func TestShimSpecRoundTrip(t *testing.T) {
	for _, s := range []shimSpec{
		{},
		{Limits: Limits{OpenFiles: 64}},
		{Limits: Limits{CPUSeconds: 1, MemoryBytes: 1 << 30, OpenFiles: 64, Processes: 10, FileBytes: 4096}},
		{RunAs: &Credential{UID: 65534, GID: 65534}},
		{Limits: Limits{FileBytes: 1<<64 - 1}, RunAs: &Credential{UID: 1<<32 - 1, GID: 1}},
		{Cgroups: 3, Net: true, RunAs: &Credential{UID: 1900000000, GID: 1900000000}},
		{Cgroups: 1},
		{Net: true},
	} {
		enc := s.encode()
		got, err := decodeShim(enc)
		if err != nil {
			t.Fatalf("decode(%q): %v", enc, err)
		}
		if got.Limits != s.Limits || got.Cgroups != s.Cgroups || got.Net != s.Net || (got.RunAs == nil) != (s.RunAs == nil) || (s.RunAs != nil && *got.RunAs != *s.RunAs) {
			t.Fatalf("decode(%q) = %+v, want %+v", enc, got, s)
		}
	}
	if enc := (shimSpec{Limits: Limits{OpenFiles: 64}, RunAs: &Credential{UID: 7, GID: 8}}).encode(); enc != "v1 nofile=64 uid=7 gid=8" {
		t.Fatalf("encode = %q", enc)
	}
}

func TestShimSpecRefused(t *testing.T) {
	for _, in := range []string{
		"", "v2", "v1 ", "v1 cpu", "v1 cpu=", "v1 cpu=0", "v1 cpu=-1", "v1 cpu=01", "v1 cpu=+1",
		"v1 cpu=1 cpu=2", "v1 rss=1", "v1 cg=5", "v1 net=2", "v1 net=0", "v1 cg=0", "v1 uid=1", "v1 gid=1", "v1 uid=4294967296 gid=1",
		"v1 cpu=18446744073709551616", "v1  cpu=1", "v1 " + strings.Repeat("cpu=1 ", 100),
	} {
		if s, err := decodeShim(in); err == nil {
			t.Errorf("decodeShim(%q) accepted: %+v", in, s)
		}
	}
}

func TestShimReport(t *testing.T) {
	err := decodeShimReport([]byte(shimReport("exec", syscall.ENOENT)), "/p")
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Path != "/p" || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("exec report: %v", err)
	}
	if err := decodeShimReport([]byte(shimReport("setuid", syscall.EPERM)), "/p"); !errors.Is(err, syscall.EPERM) {
		t.Fatalf("setuid report: %v", err)
	}
	if err := decodeShimReport([]byte(shimReport("decode", 0)), "/p"); err == nil || !strings.Contains(err.Error(), "decode") {
		t.Fatalf("decode report: %v", err)
	}
	for _, in := range []string{"", "exec", "exec x", "exec -1", "exec 99999", "launch 2", "exec 2 3"} {
		if err := decodeShimReport([]byte(in), "/p"); err == nil || !strings.Contains(err.Error(), "unreadable") {
			t.Errorf("report %q: %v, want an unreadable report", in, err)
		}
	}
}

func FuzzDecodeShim(f *testing.F) {
	for _, s := range []string{"v1", "v1 cpu=1 as=2 nofile=3 nproc=4 fsize=5 uid=6 gid=7 cg=4 net=1", "v1 uid=1", "v1 cpu=0", "v2 x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := decodeShim(in)
		if err != nil {
			return
		}
		// Whatever is accepted encodes back to something that decodes the same.
		again, err := decodeShim(s.encode())
		if err != nil || again.Limits != s.Limits || (again.RunAs == nil) != (s.RunAs == nil) {
			t.Fatalf("%q decoded to %+v, which round-trips to %+v, %v", in, s, again, err)
		}
	})
}

func FuzzDecodeShimReport(f *testing.F) {
	for _, s := range []string{"exec 2", "setuid 1", "decode 0", "exec", "x 1"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if err := decodeShimReport(in, "/p"); err == nil {
			t.Fatalf("report %q decoded to no error", in)
		}
	})
}

func TestEnvPayload(t *testing.T) {
	for _, env := range [][]string{nil, {"A=1"}, {"A=1", "B=", "C=x=y"}} {
		got, err := decodeEnv(encodeEnv(env))
		if err != nil || strings.Join(got, "\x00") != strings.Join(env, "\x00") || len(got) != len(env) {
			t.Fatalf("round trip of %q = %q, %v", env, got, err)
		}
	}
	for _, in := range []string{"A", "A=1\x00", "\x00A=1", "=1", "A=1\x00\x00B=2", strings.Repeat("x", maxEnvPayload+1)} {
		if env, err := decodeEnv([]byte(in)); err == nil {
			t.Errorf("decodeEnv(%.20q) accepted: %q", in, env)
		}
	}
}

func FuzzDecodeEnv(f *testing.F) {
	f.Add([]byte("PATH=/bin\x00HOME=/j"))
	f.Add([]byte(""))
	f.Add([]byte("A\x00"))
	f.Fuzz(func(t *testing.T, in []byte) {
		env, err := decodeEnv(in)
		if err != nil {
			return
		}
		if again := encodeEnv(env); string(again) != string(in) {
			t.Fatalf("%q decoded to %q, which encodes to %q", in, env, again)
		}
	})
}
