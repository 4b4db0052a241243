package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/examples/internal/npb"
	"github.com/zorilla-p2p/zorilla/examples/internal/npb/npbtest"
)

// Every rank of a 5-rank job over 3 agents prints one line with its rank,
// the size and its place, after the barrier.
func TestEveryRankSaysWhereItIs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const size = 5
	out := make([]bytes.Buffer, size)
	err := npbtest.Run(ctx, 3, size, func(c npb.Comm) error {
		p := place{Host: "box", Agent: fmt.Sprintf("a%d", c.Rank()%3)}
		return run(c.(npb.World).C, p, &out[c.Rank()])
	})
	if err != nil {
		t.Fatal(err)
	}
	for r := range size {
		want := fmt.Sprintf("rank %d of %d on box (agent a%d)\n", r, size, r%3)
		if got := out[r].String(); got != want {
			t.Errorf("rank %d printed %q, want %q", r, got, want)
		}
	}
}

func TestShortAbbreviatesLikeLibp2p(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"short", "short"},
		{"12D3KooWAbCdEfGhIjKlMnOp", "12*KlMnOp"},
	} {
		if got := short(c.in); got != c.want {
			t.Errorf("short(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// Without an agent the program says how to run it and fails.
func TestWithoutAnAgentItExplains(t *testing.T) {
	for _, k := range []string{"ZORILLA_SOCKET", "ZORILLA_RANK", "ZORILLA_SIZE", "ZORILLA_REPLICA", "ZORILLA_JOB", "ZORILLA_KEY"} {
		t.Setenv(k, "")
	}
	var stdout, stderr bytes.Buffer
	if code := realMain(&stdout, &stderr); code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	if !strings.Contains(stderr.String(), "hostname:") || stdout.Len() != 0 {
		t.Fatalf("stdout %q stderr %q", stdout.String(), stderr.String())
	}
}
