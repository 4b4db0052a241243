package main

import (
	"bytes"
	"strings"
	"testing"
)

// The sizes, the count of round trips and the table are internal/pingpong's
// and tested there.

func TestUsage(t *testing.T) {
	var out, errs bytes.Buffer
	if code := realMain([]string{"0"}, &out, &errs); code != 2 || !strings.Contains(errs.String(), "usage") {
		t.Fatalf("exit %d, stderr %q", code, errs.String())
	}
}
