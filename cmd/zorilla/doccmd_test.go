package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The user's documentation, from this package's folder.
const repoRoot = "../.."

// docCommand is one `zorilla ...` command line a document shows in a code
// block, with the refusal the document says it prints, if any.
type docCommand struct {
	file, text string
	line       int
	args       []string // the words after "zorilla"
	refusal    string   // a "zorilla: ..." line shown right after it ("$ " blocks)
}

func (c docCommand) String() string { return fmt.Sprintf("%s:%d: %s", c.file, c.line, c.text) }

// userDocs lists README.md and docs/*.md, the documents whose commands
// must work as shown.
func userDocs(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil || len(docs) < 5 {
		t.Fatalf("docs/*.md: %v (found %d)", err, len(docs))
	}
	return append([]string{filepath.Join(repoRoot, "README.md"), filepath.Join(repoRoot, "examples", "README.md")}, docs...)
}

// codeLine is a line of a code block a reader would type or read.
type codeLine struct {
	n      int
	text   string
	prompt bool // a console block: "$ " lines are commands, the rest output
}

// fenceRE opens or closes a fenced block, possibly indented in a list.
var fenceRE = regexp.MustCompile("^\\s*```\\s*(\\w*)")

// shellLangs are the fenced blocks whose lines are commands.
var shellLangs = map[string]bool{"": true, "sh": true, "bash": true, "shell": true, "console": true}

// codeLines returns the lines of a markdown file's shell code blocks:
// fenced blocks of a shell language and indented blocks.
func codeLines(t *testing.T, path string) []codeLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []codeLine
	inFence, shell, console, prevBlank, inIndent := false, false, false, true, false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		if m := fenceRE.FindStringSubmatch(l); m != nil {
			if !inFence {
				shell, console = shellLangs[m[1]], m[1] == "console"
			}
			inFence, inIndent, prevBlank = !inFence, false, false
			continue
		}
		switch {
		case inFence && shell:
			out = append(out, codeLine{n, strings.TrimSpace(l), console})
		case !inFence && strings.HasPrefix(l, "    ") && (prevBlank || inIndent):
			inIndent = true
			out = append(out, codeLine{n, strings.TrimSpace(l), false})
		case strings.TrimSpace(l) != "":
			inIndent = false
		}
		prevBlank = strings.TrimSpace(l) == ""
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// docCommands extracts every zorilla command line of a document: a line,
// with its backslash continuations, cut at ; && || |, whose segment starts
// with zorilla (or go run ./cmd/zorilla), after VAR=value words and
// do/sudo/ssh HOST.
func docCommands(t *testing.T, path string) []docCommand {
	t.Helper()
	rel, _ := filepath.Rel(repoRoot, path)
	lines := codeLines(t, path)
	var out []docCommand
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if l.prompt && !strings.HasPrefix(l.text, "$ ") {
			continue
		}
		text := strings.TrimPrefix(l.text, "$ ")
		for strings.HasSuffix(text, `\`) && i+1 < len(lines) && lines[i+1].n == lines[i].n+1 {
			i++
			text = strings.TrimSuffix(text, `\`) + " " + lines[i].text
		}
		refusal := ""
		if l.prompt && i+1 < len(lines) && !strings.HasPrefix(lines[i+1].text, "$ ") && strings.HasPrefix(lines[i+1].text, "zorilla: ") {
			refusal = lines[i+1].text
		}
		for _, seg := range shellSegments(stripComment(text)) {
			if !strings.Contains(seg, "zorilla") {
				continue // a diagram, or another program's command
			}
			words, err := shellWords(seg)
			if err != nil {
				t.Errorf("%s:%d: %v: %s", rel, l.n, err, seg)
				continue
			}
			if args, ok := zorillaArgs(words); ok {
				out = append(out, docCommand{file: rel, line: l.n, text: seg, args: args, refusal: refusal})
			}
		}
	}
	return out
}

// stripComment cuts a line at a # that starts a shell comment.
func stripComment(s string) string {
	quote := rune(0)
	for i, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && (i == 0 || s[i-1] == ' ' || s[i-1] == '\t'):
			return strings.TrimSpace(s[:i])
		}
	}
	return strings.TrimSpace(s)
}

// shellSegments cuts a command line at ; && || and |, outside quotes.
func shellSegments(s string) []string {
	var out []string
	quote, start := byte(0), 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == ';' || c == '|' || c == '&':
			out = append(out, strings.TrimSpace(s[start:i]))
			if i+1 < len(s) && (s[i+1] == '|' || s[i+1] == '&') {
				i++
			}
			start = i + 1
		}
	}
	return append(out, strings.TrimSpace(s[start:]))
}

// shellWords splits a segment into words as sh would, for the quoting the
// documents use: '...' and "..." without escapes inside.
func shellWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord, quote := false, byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			cur.WriteByte(c)
		case c == '\'' || c == '"':
			quote, inWord = c, true
		case c == ' ' || c == '\t':
			if inWord {
				words, inWord = append(words, cur.String()), false
				cur.Reset()
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unclosed quote")
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// zorillaArgs returns the words after zorilla when the segment runs it.
func zorillaArgs(w []string) ([]string, bool) {
	for len(w) > 0 {
		switch {
		case w[0] == "do" || w[0] == "then" || w[0] == "sudo" || w[0] == "time" || w[0] == "exec":
			w = w[1:]
		case strings.Contains(w[0], "=") && !strings.HasPrefix(w[0], "-"):
			w = w[1:] // VAR=value
		case w[0] == "ssh":
			host := 1
			for host < len(w) && !strings.Contains(w[host], "@") {
				host++
			}
			if host == len(w) {
				return nil, false
			}
			w = w[host+1:]
		case w[0] == "zorilla" || w[0] == "./zorilla" || w[0] == "/usr/local/bin/zorilla":
			return w[1:], true
		case len(w) > 2 && w[0] == "go" && w[1] == "run" && w[2] == "./cmd/zorilla":
			return w[3:], true
		default:
			return nil, false
		}
	}
	return nil, false
}
