package main

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

// --web that does not parse is a usage error; one whose port is taken
// stops the agent at start, saying what to do.
func TestAgentWebAddrErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, tc := range []struct {
		web  string
		code int
		want []string
	}{
		{"nonsense", 2, []string{"--web", "want HOST:PORT"}},
		{"example.com:80", 2, []string{"--web", "not an IP address"}},
		{"127.0.0.1:99999", 2, []string{"--web", "port"}},
		{ln.Addr().String(), 1, []string{"--web", "listen on " + ln.Addr().String(), "--web off"}},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var out, errw syncBuffer
		code := runContext(ctx, []string{"zorilla", "agent", "--data-dir", shortDataDir(t), "--mdns=false",
			"--listen", "/ip4/127.0.0.1/tcp/0", "--web", tc.web}, &out, &errw)
		cancel()
		for _, w := range tc.want {
			if !strings.Contains(errw.String(), w) {
				t.Errorf("--web %s: stderr lacks %q: %s", tc.web, w, errw.String())
			}
		}
		if code != tc.code {
			t.Errorf("--web %s: exit %d, want %d", tc.web, code, tc.code)
		}
	}
}
