package main

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// The documents a user reads: what they say must be about the software,
// not about how it was written.
func readerDocs(t *testing.T) map[string]string {
	t.Helper()
	paths := append(userDocs(t), filepath.Join(repoRoot, "BENCHMARKS.md"), filepath.Join(repoRoot, "SECURITY.md"))
	out := map[string]string{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repoRoot, p)
		out[rel] = string(b)
	}
	return out
}

// historyRE finds the history of the work, anywhere in a document:
// issue numbers, work sessions, branches, the people who did it.
var historyRE = regexp.MustCompile(`(?i)\bissues?\s*#?\d+|\b\w+(st|nd|rd|th) session\b|session of the day|` +
	`\bother (engineers|helpers|sessions)\b|\bbranch(es)?\b`)

// proseHistoryRE finds, outside commands, what dates and names the work:
// dates and times of measurements, commits, and test functions (commands
// that reproduce a figure may name the test that measures it).
var proseHistoryRE = regexp.MustCompile(`\b20\d\d-\d\d-\d\d\b|\b\d\d:\d\d(:\d\d)?(-\d\d:\d\d(:\d\d)?)? UTC\b|` +
	`\b(Test|Benchmark|Fuzz|Example)[A-Z0-9_]\w*|\bcommits? [0-9a-f]{7,40}\b`)

// hashRE finds a short commit hash: 7 to 12 hex digits with a letter and a digit.
var hashRE = regexp.MustCompile(`\b[0-9a-f]{7,12}\b`)

// commandRE is a code block, or a code span holding a command.
var commandRE = regexp.MustCompile("(?s)```.*?```|`(go |ZORILLA_|GOLOG|\\./|/tmp/|zorilla |mpirun|cd |sh )[^`]*`")

func TestDocsTellNoHistory(t *testing.T) {
	for name, text := range readerDocs(t) {
		for _, m := range historyRE.FindAllString(text, -1) {
			t.Errorf("%s: %q: the history of the work belongs in git, not in a user's document", name, m)
		}
		prose := commandRE.ReplaceAllString(text, "")
		prose = regexp.MustCompile(`(?m)^ {4}.*$`).ReplaceAllString(prose, "") // indented code
		for _, m := range proseHistoryRE.FindAllString(prose, -1) {
			t.Errorf("%s: %q: dates, commits and test names tell how the work was done", name, m)
		}
		for _, m := range hashRE.FindAllString(prose, -1) {
			if strings.ContainsAny(m, "0123456789") && strings.ContainsAny(m, "abcdef") {
				t.Errorf("%s: %q looks like a commit", name, m)
			}
		}
	}
}

// The front page and the figures stay short enough to read: README a
// page and a half, BENCHMARKS the current figures only.
func TestDocsStayShort(t *testing.T) {
	docs := readerDocs(t)
	for name, most := range map[string]int{"README.md": 150, "BENCHMARKS.md": 300} {
		if n := strings.Count(docs[name], "\n"); n > most {
			t.Errorf("%s has %d lines, more than %d: say it shorter, or move detail to docs/", name, n, most)
		}
	}
}

// linkRE is a markdown link to a file of the repository.
var linkRE = regexp.MustCompile(`\]\(([^)#\s]+)(#[^)\s]*)?\)`)

func TestDocLinksResolve(t *testing.T) {
	for name, text := range readerDocs(t) {
		for _, m := range linkRE.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			p := filepath.Join(repoRoot, filepath.Dir(name), target)
			if _, err := os.Stat(p); err != nil {
				t.Errorf("%s links to %s, which does not exist", name, target)
			}
		}
	}
}

// TestAgentFlagsDocumented checks that docs/agents.md's table names every
// flag of `zorilla agent` with its environment variable, so that the table
// grows with the flags.
func TestAgentFlagsDocumented(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "docs", "agents.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	var agent *cli.Command
	for _, c := range newApp(io.Discard, io.Discard).Commands {
		if c.Name == "agent" {
			agent = c
		}
	}
	if agent == nil {
		t.Fatal("no agent command")
	}
	for _, f := range agent.Flags {
		name := f.Names()[0]
		if vf, ok := f.(cli.VisibleFlag); name == "help" || ok && !vf.IsVisible() {
			continue // hidden flags are the testnet's
		}
		df, ok := f.(cli.DocGenerationFlag)
		if !ok || len(df.GetEnvVars()) == 0 {
			t.Errorf("agent flag --%s has no environment variable", name)
			continue
		}
		row := "| `--" + name + "` | `" + df.GetEnvVars()[0] + "`"
		if !strings.Contains(doc, row) {
			t.Errorf("docs/agents.md has no row %q for the flag --%s", row, name)
		}
	}
}

// TestExamplesListed checks that examples/README.md lists every example.
func TestExamplesListed(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "examples", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Join(repoRoot, "examples"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && e.Name() != "internal" && !strings.Contains(string(b), "]("+e.Name()) {
			t.Errorf("examples/README.md does not list examples/%s", e.Name())
		}
	}
}

// TestHistoryPatterns: the patterns above find what they are for and
// leave the system's own words alone.
func TestHistoryPatterns(t *testing.T) {
	for _, c := range []struct {
		text  string
		found bool
	}{
		{"as issue 15 asked", true},
		{"in the seventh session", true},
		{"measured on branch shm", true},
		{"while other engineers' builds ran", true},
		{"run of 2026-11-25", true},
		{"at 16:05-16:12 UTC", true},
		{"TestSwapTurnsRotateSets checks it", true},
		{"before commit 7fa5fd1", true},
		{"the lead copy of a rank sends", false},
		{"a job's session reads the reports", false},
		{"IS class A on 4 ranks: 1.33x NPB's time", false},
		{"Test a program with zorilla demo", false},
	} {
		found := historyRE.MatchString(c.text) || proseHistoryRE.MatchString(c.text)
		if found != c.found {
			t.Errorf("%q: found %v, want %v", c.text, found, c.found)
		}
	}
}
