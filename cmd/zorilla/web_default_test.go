package main

import (
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestSixAgentsShareTheDefaultWebPort: six agents of one machine started
// without --web all come up, each with its view on its own port from the
// default one on, and each says where: in its first lines, which say when
// the default was taken, and in zorilla id.
func TestSixAgentsShareTheDefaultWebPort(t *testing.T) {
	t.Setenv("ZORILLA_WEB", "")
	os.Unsetenv("ZORILLA_WEB") // TestMain's "off"; restored when the test ends
	viewLine := regexp.MustCompile(`(?m)^web view on (http://127\.0\.0\.1:(\d+)/)( \(127\.0\.0\.1:4080 is taken\))?$`)
	seen := map[string]bool{}
	var boot string
	for i := range 6 {
		dir := shortDataDir(t)
		var args []string
		if boot != "" {
			args = []string{"--bootstrap", boot}
		}
		info, out := startAgentInProcess(t, dir, args...)
		if boot == "" {
			boot = info.Addrs[0]
		}
		waitFor(t, 10*time.Second, "the agent's first lines", func() bool { return strings.Contains(out.String(), "listening on") })
		m := viewLine.FindStringSubmatch(out.String())
		if m == nil || seen[m[1]] || m[1] != info.Web || (m[2] == "4080") != (m[3] == "") {
			t.Fatalf("agent %d: its view at %q (seen %v):\n%s", i, info.Web, seen, out.String())
		}
		seen[m[1]] = true
		if r := zorilla("id", "--data-dir", dir); !strings.HasSuffix(r.stdout, "\nweb "+m[1]+"\n") {
			t.Errorf("agent %d: zorilla id does not say where its view is:\n%v", i, r)
		}
		resp, err := http.Get(m[1] + "api/id")
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("agent %d: GET %sapi/id: %v %v", i, m[1], resp, err)
		}
		resp.Body.Close()
	}
}

// TestExplicitWebAddressTaken: a --web address the owner chose (flag or
// ZORILLA_WEB) that is taken stops the agent, saying why.
func TestExplicitWebAddressTaken(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"flag", []string{"--web", addr}},
		{"environment", nil},
	} {
		t.Setenv("ZORILLA_WEB", addr)
		args := append([]string{"agent", "--data-dir", shortDataDir(t), "--listen", "/ip4/127.0.0.1/tcp/0", "--mdns=false"}, tc.args...)
		if r := zorilla(args...); r.code == 0 || !strings.Contains(r.stderr, "listen on "+addr) ||
			!strings.Contains(r.stderr, "pick another --web port, or --web off") {
			t.Errorf("%s: want a refusal naming %s, got %v", tc.name, addr, r)
		}
	}
}
