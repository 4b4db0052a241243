package main

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseFlags(t *testing.T) {
	o, err := parse([]string{"-scale", "10", "-seed", "7", "-n", "5, 30", "-strategy", "spread", "-out", "/tmp/x",
		"-first", "50ms", "-grace", "100ms", "-max-radius", "4", "-converge", "25m",
		"-cpuprofile", "/tmp/cpu", "-trace", "/tmp/trace", "-memprofile", "/tmp/mem"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	cfg, out := o.cfg, o.out
	if o.prof != (profiles{cpu: "/tmp/cpu", mem: "/tmp/mem", trace: "/tmp/trace"}) {
		t.Fatalf("profiles %+v", o.prof)
	}
	if cfg.Scale != 10 || cfg.Seed != 7 || len(cfg.Ns) != 2 || cfg.Ns[1] != 30 || len(cfg.Strategies) != 1 || out != "/tmp/x" ||
		cfg.Submitter.Schedule.First != 50*time.Millisecond || cfg.Submitter.OfferGrace != 100*time.Millisecond || cfg.Submitter.Schedule.MaxRadius != 4 ||
		cfg.Converge != 25*time.Minute {
		t.Fatalf("parsed %+v into %s", cfg, out)
	}
	defo, err := parse(nil, &bytes.Buffer{})
	def := defo.cfg
	if err != nil || defo.prof != (profiles{}) || def.Scale != 1 || len(def.Ns) != 11 || def.Ns[0] != 100 || def.Ns[10] != 600 || len(def.Strategies) != 2 {
		t.Fatalf("defaults %+v, %v", def, err)
	}
	for _, bad := range [][]string{{"-scale", "0"}, {"-n", "0"}, {"-n", "x"}, {"-strategy", "scatter"}, {"-first", "-1s"},
		{"-max-radius", "-1"}, {"-converge", "-1m"}, {"extra"}, {"-nope"}} {
		if _, err := parse(bad, &bytes.Buffer{}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	var stderr bytes.Buffer
	if code := run([]string{"-n", "x"}, &bytes.Buffer{}, &stderr); code != 2 || !strings.Contains(stderr.String(), "-n") {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
}

// A 20-host miniature end to end: the table on stdout, the CSV and one
// figure per strategy on disk.
func TestRunSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 20 agents")
	}
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run([]string{"-scale", "20", "-n", "4,25", "-out", dir, "-cpuprofile", filepath.Join(dir, "cpu.out"),
		"-memprofile", filepath.Join(dir, "mem.out")}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	table := stdout.String()
	for _, want := range []string{"strategy", "nancy", "concentrate", "spread", "allocations follow"} {
		if !strings.Contains(table, want) {
			t.Fatalf("stdout lacks %q:\n%s", want, table)
		}
	}
	if !strings.Contains(stderr.String(), "CPU s") {
		t.Fatalf("stderr lacks the CPU per job:\n%s", stderr.String())
	}
	for _, name := range []string{"cpu.out", "mem.out.start", "mem.out"} {
		if st, err := os.Stat(filepath.Join(dir, name)); err != nil || st.Size() == 0 {
			t.Fatalf("no profile %s: %v", name, err)
		}
	}
	f, err := os.Open(filepath.Join(dir, "grid5000.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) != 5 || rows[1][0] != "concentrate" || rows[1][1] != "4" {
		t.Fatalf("csv %v, %v", rows, err)
	}
	for _, s := range []string{"concentrate", "spread"} {
		b, err := os.ReadFile(filepath.Join(dir, "grid5000-"+s+".svg"))
		if err != nil || !bytes.HasPrefix(b, []byte("<svg")) {
			t.Fatalf("%s figure: %v", s, err)
		}
	}
}
