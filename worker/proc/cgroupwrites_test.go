package proc

import (
	"fmt"
	"testing"
)

func TestCgroupWrites(t *testing.T) {
	for _, tc := range []struct {
		version int
		res     Resources
		want    string
	}{
		{1, Resources{}, "[]"},
		{2, Resources{}, "[]"},
		{1, Resources{MemoryBytes: 1 << 20, Pids: 10, CPUs: 1.5}, "[{memory memory.limit_in_bytes 1048576 false} {memory memory.memsw.limit_in_bytes 1048576 true} " +
			"{pids pids.max 10 false} {cpu cpu.shares 1536 false} {cpu cpu.cfs_period_us 100000 false} {cpu cpu.cfs_quota_us 150000 false}]"},
		{2, Resources{MemoryBytes: 1 << 20, Pids: 10, CPUs: 2}, "[{memory memory.max 1048576 false} {memory memory.swap.max 0 true} " +
			"{pids pids.max 10 false} {cpu cpu.weight 200 false} {cpu cpu.max 200000 100000 false}]"},
		{2, Resources{CPUs: 0.001}, "[{cpu cpu.weight 1 false} {cpu cpu.max 1000 100000 false}]"}, // the kernel's least quota and weight
		{1, Resources{CPUs: 0.001}, "[{cpu cpu.shares 2 false} {cpu cpu.cfs_period_us 100000 false} {cpu cpu.cfs_quota_us 1000 false}]"},
		{2, Resources{CPUs: 512}, "[{cpu cpu.weight 10000 false} {cpu cpu.max 51200000 100000 false}]"}, // the kernel's greatest weight
	} {
		if got := fmt.Sprint(cgroupWrites(tc.version, tc.res)); got != tc.want {
			t.Errorf("v%d %+v:\n got %s\nwant %s", tc.version, tc.res, got, tc.want)
		}
	}
}

func TestParseUIDRange(t *testing.T) {
	for in, want := range map[string]string{
		"1900000000-1900065535": "1900000000-1900065535",
		"5000-5000":             "5000-5000",
		"":                      "error", "5000": "error", "6000-5000": "error", "10-20": "error",
		"1000-4294967295": "error", "a-b": "error", "-1-5": "error",
	} {
		r, err := ParseUIDRange(in)
		got := r.String()
		if err != nil {
			got = "error"
		}
		if got != want {
			t.Errorf("ParseUIDRange(%q) = %s (%v), want %s", in, got, err, want)
		}
	}
}
