package main

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestDocCommandsExtraction: which lines of a document are zorilla
// commands, with their arguments and the refusal shown after them.
func TestDocCommandsExtraction(t *testing.T) {
	doc := "Text zorilla jobs is prose.\n\n" +
		"    zorilla agent --open   # a comment\n" +
		"    go run ./cmd/zorilla demo\n\n" +
		"```sh\n" +
		"zorilla submit -n 8 \\\n    --env 'K=a b' ./prog\n" +
		"for h in a b; do ssh root@$h zorilla trust add X; done\n" +
		"install -m 0755 zorilla /usr/local/bin/zorilla && zorilla id\n" +
		"```\n\n" +
		"```text\nzorilla agent 12D3KooW output, not a command\n```\n\n" +
		"```console\n$ zorilla stop JOB\nzorilla: stop needs --checkpoint\n$ zorilla jobs\nID STATE\n```\n"
	path := filepath.Join(t.TempDir(), "doc.md")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	var got [][]string
	var refusals []string
	for _, c := range docCommands(t, path) {
		got = append(got, c.args)
		refusals = append(refusals, c.refusal)
	}
	want := [][]string{
		{"agent", "--open"},
		{"demo"},
		{"submit", "-n", "8", "--env", "K=a b", "./prog"},
		{"trust", "add", "X"},
		{"id"},
		{"stop", "JOB"},
		{"jobs"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("commands\n got %q\nwant %q", got, want)
	}
	wantRefusals := []string{"", "", "", "", "", "zorilla: stop needs --checkpoint", ""}
	if !reflect.DeepEqual(refusals, wantRefusals) {
		t.Errorf("refusals %q, want %q", refusals, wantRefusals)
	}
}
