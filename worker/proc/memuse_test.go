package proc

import (
	"os"
	"os/exec"
	"runtime"
	"testing"
)

func TestParseVmRSS(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"Name:\tx\nVmPeak:\t  9000 kB\nVmRSS:\t    1234 kB\nThreads: 1\n", 1234 << 10, true},
		{"Name:\tkthreadd\nThreads: 1\n", 0, false},
		{"VmRSS:\t12 MB\n", 0, false},
		{"VmRSS:\t-5 kB\n", 0, false},
		{"VmRSS:\tlots kB\n", 0, false},
		{"VmRSS:\t99999999999999999999 kB\n", 0, false},
		{"", 0, false},
	}
	for _, c := range cases {
		got, ok := ParseVmRSS([]byte(c.in))
		if got != c.want || ok != c.ok {
			t.Errorf("ParseVmRSS(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func FuzzParseVmRSS(f *testing.F) {
	f.Add([]byte("VmRSS:\t    1234 kB\n"))
	f.Add([]byte("VmRSS: 1 kB kB\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if n, ok := ParseVmRSS(b); ok && (n < 0 || n > 1<<50) {
			t.Fatalf("ParseVmRSS gave %d", n)
		}
	})
}

// ResidentMemory counts a real process and its child.
func TestResidentMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	self := ResidentMemory([]int{os.Getpid()})
	if self <= 0 {
		t.Fatalf("this test process uses %d bytes", self)
	}
	cmd := exec.Command("sh", "-c", "sleep 30 & wait")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	sh := ResidentMemory([]int{cmd.Process.Pid})
	if sh <= 0 {
		t.Fatalf("sh uses %d bytes", sh)
	}
	if ResidentMemory([]int{0, -1}) != 0 {
		t.Fatal("bad pids counted")
	}
}
