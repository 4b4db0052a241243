package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	logging "github.com/ipfs/go-log/v2"
)

// Values the documents' placeholders stand for.
const (
	docPeerID = "12D3KooWQQX8c5gu2iGZDCieYcd3q3yD4rRzdFSqcexCZPb43pjd"
	docJobID  = "g463w26f7echuzbdtybaz2vvfc"
)

// TestDocCommandsParse runs every zorilla command README.md, examples/README.md
// and docs/*.md show, through the real command line, and checks it is
// accepted: flags, their values and the arguments. Each runs in-process with
// a context already cancelled, no agent, a data dir of its own and
// placeholder files for the programs it names, so it ends at the first step
// that would wait or reach the network (exit 1 "agent is not running", 130
// "interrupted", or 0 for an agent started and stopped at once). Exit 2 is a
// refused command line: it fails the test, unless the document shows that
// refusal right after the command ("$ zorilla ..." then "zorilla: ...").
func TestDocCommandsParse(t *testing.T) {
	var cmds []docCommand
	for _, doc := range userDocs(t) {
		cmds = append(cmds, docCommands(t, doc)...)
	}
	if len(cmds) < 40 {
		t.Fatalf("found only %d zorilla commands in the documents", len(cmds))
	}
	yaml := docJobFile(t)
	work := t.TempDir()
	docEnv(t, work)
	t.Chdir(work)
	for _, c := range cmds {
		args := docArgs(t, c, work, yaml)
		if args == nil {
			continue
		}
		code, stderr := runDocCommand(t, c, args)
		t.Logf("%v: exit %d: %s", c, code, docFirstLine(stderr))
		switch {
		case c.refusal != "" && (code != 2 || !strings.Contains(stderr, c.refusal)):
			t.Errorf("%v\n  the document shows the refusal %q; it exited %d:\n%s", c, c.refusal, code, stderr)
		case c.refusal == "" && code == 2:
			t.Errorf("%v\n  refused (exit 2):\n%s", c, stderr)
		}
	}
}

// docEnv points every default of the agent and the commands at the test's
// own folder and loopback, so that no command touches this machine's agent,
// its ports or the Internet, or a docker testnet.
func docEnv(t *testing.T, work string) {
	env := map[string]string{
		"HOME":                     work,
		"ZORILLA_DATA_DIR":         filepath.Join(work, "dd", "default"),
		"ZORILLA_LISTEN":           "/ip4/127.0.0.1/tcp/0",
		"ZORILLA_WEB":              "off",
		"ZORILLA_MDNS":             "false",
		"ZORILLA_PUBLIC_BOOTSTRAP": "/ip4/127.0.0.1/tcp/9/p2p/" + docPeerID,
		// A testnet folder too long for the agents' unix sockets is
		// refused before docker is run.
		"ZORILLA_TESTNET_DIR": filepath.Join(work, strings.Repeat("t", 120)),
		"ZORILLA_TESTNET":     "doctest",
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
}

// runDocCommand runs one command in-process and returns its exit code and
// what it printed on stderr.
func runDocCommand(t *testing.T, c docCommand, args []string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errw bytes.Buffer
	done := make(chan int, 1)
	// An agent run with --log-level debug leaves the process's loggers there.
	defer func() { _ = logging.SetLogLevel("*", "error") }()
	go func() { done <- runContext(ctx, append([]string{"zorilla"}, args...), &out, &errw) }()
	select {
	case code := <-done:
		return code, errw.String()
	case <-time.After(2 * time.Minute):
		t.Fatalf("%v: still running after 2 minutes with its context cancelled", c)
		return 0, ""
	}
}

var (
	// addrPortRE: documents' addresses are rewritten to loopback, port 0.
	addrPortRE = regexp.MustCompile(`/ip4/[^/]+/(tcp|udp)/\d+`)
	// hostPortRE: a --web HOST:PORT.
	hostPortRE = regexp.MustCompile(`^[^:]*:\d+$`)
)

// docArgs turns a document's words into arguments this test can run:
// placeholders filled, addresses on loopback, data dirs in the test's
// folder, and the files the command names made in the working folder.
func docArgs(t *testing.T, c docCommand, work, yaml string) []string {
	t.Helper()
	args := make([]string, len(c.args))
	for i, a := range c.args {
		prev := ""
		if i > 0 {
			prev = c.args[i-1]
		}
		if strings.Contains(a, "$") {
			t.Errorf("%v: a shell variable (%s) in a documented command: write a value", c, a)
			return nil
		}
		a = strings.ReplaceAll(a, "12D3KooW...", docPeerID)
		a = addrPortRE.ReplaceAllString(a, "/ip4/127.0.0.1/$1/0")
		switch {
		case a == "JOB":
			a = docJobID
		case prev == "--data-dir":
			a = filepath.Join(work, "dd", strings.NewReplacer("/", "_", "~", "home").Replace(a))
		case prev == "--web" && hostPortRE.MatchString(a):
			a = "127.0.0.1:0"
		}
		docPlaceholder(t, work, prev, a, yaml)
		args[i] = a
	}
	return args
}

// docPlaceholder makes the file a command's word names, if it is one: a
// program (./NAME), an --input, a job --file, a --sites file, an
// --output-dir.
func docPlaceholder(t *testing.T, work, prev, word, yaml string) {
	t.Helper()
	write := func(name, body string, mode os.FileMode) {
		p := filepath.Join(work, name)
		if _, err := os.Stat(p); err == nil {
			return
		}
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
	switch {
	case prev == "--input":
		write(word, "input\n", 0o644)
	case prev == "--output-dir":
		if err := os.MkdirAll(filepath.Join(work, word), 0o755); err != nil {
			t.Fatal(err)
		}
	case prev == "--sites":
		write(word, "nancy 2 hosts x 2 cores\n", 0o644)
	case prev == "--file":
		write(word, yaml, 0o644)
		for _, m := range regexp.MustCompile(`(?m)^executable: \./(\S+)`).FindAllStringSubmatch(yaml, -1) {
			write(m[1], "#!/bin/sh\nexit 0\n", 0o755)
		}
		for _, m := range regexp.MustCompile(`(?m)^inputs: \[(\S+)\]`).FindAllStringSubmatch(yaml, -1) {
			write(m[1], "input\n", 0o644)
		}
	case strings.HasPrefix(word, "./") && !strings.Contains(word[2:], "/"):
		write(word[2:], "#!/bin/sh\nexit 0\n", 0o755)
	}
}

// docJobFile returns the job file docs/jobs.md shows (its first yaml block).
func docJobFile(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "docs", "jobs.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindSubmatch(b)
	if m == nil {
		t.Fatal("docs/jobs.md shows no job file (a ```yaml block)")
	}
	return string(m[1])
}

// docFirstLine is the first line of s, for the test's log.
func docFirstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
