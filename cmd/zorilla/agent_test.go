package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/node"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"2G": 2 << 30, "512M": 512 << 20, "512MiB": 512 << 20, "1.5g": 3 << 29, "4096": 4096,
		"8KB": 8 << 10, " 1T ": 1 << 40,
	} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("%q: %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "G", "2X", "-1G", "0", "NaN", "1e30T", "2 G B"} {
		if got, err := parseSize(in); err == nil {
			t.Errorf("%q: %d, want an error", in, got)
		}
	}
	for n, want := range map[int64]string{2 << 30: "2G", 3 << 29: "1536M", 1000: "1000", 16 << 40: "16T"} {
		if got := formatSize(n); got != want {
			t.Errorf("formatSize(%d) = %s, want %s", n, got, want)
		}
	}
}

// shortDataDir is a data dir whose socket path fits the unix limit.
func shortDataDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "za")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func TestAgentBadInputExits2(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	dir := shortDataDir(t)
	const id = "12D3KooWLRPJAA5o6Cj9GDcC5AjByEEKjy1k3ZXgtU3K4E3vTnBR"
	badList := filepath.Join(t.TempDir(), "allow")
	if err := os.WriteFile(badList, []byte(id+"\nnot-a-peer\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string // in the one line on stderr
	}{
		{"cores not a number", nil, []string{"--cores", "x"}, `invalid value "x" for flag -cores`},
		{"cores zero", nil, []string{"--cores", "0"}, "cores 0 < 1"},
		{"env cores", map[string]string{"ZORILLA_CORES": "abc"}, nil, `"abc" as int value from environment variable "ZORILLA_CORES"`},
		{"unknown flag", nil, []string{"--frobnicate"}, "flag provided but not defined: -frobnicate"},
		{"memory", nil, []string{"--memory", "2X"}, `--memory: "2X" is not a size`},
		{"data dir is a file", nil, []string{"--data-dir", file}, "data dir unusable"},
		{"data dir under a file", nil, []string{"--data-dir", filepath.Join(file, "sub")}, "data dir unusable"},
		{"bootstrap does not parse", nil, []string{"--bootstrap", "/ip4/1.2.3/tcp/1"}, `bootstrap address "/ip4/1.2.3/tcp/1"`},
		{"bootstrap without peer", nil, []string{"--bootstrap", "/ip4/1.2.3.4/tcp/1"}, "ending in /p2p/<peer ID>"},
		{"env bootstrap, one bad", map[string]string{"ZORILLA_BOOTSTRAP": "/ip4/1.2.3.4/tcp/1/p2p/" + id + ",nonsense"}, nil, `bootstrap address "nonsense"`},
		{"listen", nil, []string{"--listen", "tcp://0.0.0.0:4001"}, `listen address "tcp://0.0.0.0:4001"`},
		{"label", nil, []string{"--label", "a b"}, `label "a b"`},
		{"network name", nil, []string{"--network", "My/Net"}, `--network: network name "My/Net": 'M' is not allowed`},
		{"env network empty", map[string]string{"ZORILLA_NETWORK": "-x"}, nil, `--network: network name "-x"`},
		{"drain timeout", nil, []string{"--drain-timeout", "-1s"}, "--drain-timeout: must not be negative"},
		{"reachability", nil, []string{"--reachability", "maybe"}, `reachability "maybe": want auto, public or private`},
		{"relay circuits", nil, []string{"--relay-circuits", "0"}, "relay reservations 128 and circuits 0 must be >= 1"},
		{"allow file does not parse", nil, []string{"--allow", badList}, `allow list: peer list ` + badList + `: line 2: "not-a-peer" is not a peer ID`},
		{"public bootstrap does not parse", nil, []string{"--bootstrap", "public", "--open", "--public-bootstrap", "/ip4/1.2.3/tcp/1"}, `public bootstrap address "/ip4/1.2.3/tcp/1"`},
		{"allow file missing", nil, []string{"--allow", file + ".nope"}, "no such file"},
		{"max procs", nil, []string{"--max-procs", "-2"}, "max procs -2"},
		{"log level", nil, []string{"--log-level", "loud"}, "--log-level"},
		{"argument", nil, []string{"extra"}, `agent takes no arguments, got "extra"`},
		{"run as root", nil, []string{"--run-as", "0"}, `run as "0": that is root`},
		{"run as nobody known", nil, []string{"--run-as", "no-such-user-zorilla"}, `run as "no-such-user-zorilla"`},
		{"uid range", nil, []string{"--uid-range", "9-1"}, `uid range: user ID range "9-1"`},
		{"env job network", map[string]string{"ZORILLA_JOB_NETWORK": "bridge"}, nil, `job network "bridge": want isolated or host`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			args := append([]string{"agent", "--data-dir", dir, "--listen", "/ip4/127.0.0.1/tcp/0", "--mdns=false"}, tc.args...)
			r := zorilla(args...)
			if r.code != 2 || !strings.Contains(r.stderr, tc.want) || strings.Count(r.stderr, "\n") != 1 {
				t.Fatalf("want exit 2 and one line with %q, got %v", tc.want, r)
			}
		})
	}
}

// runAgentInProcess starts `zorilla agent` in this process until the test
// ends, and waits for its socket to answer.
func runAgentInProcess(t *testing.T, dir string, args ...string) node.IDInfo {
	t.Helper()
	info, _ := startAgentInProcess(t, dir, args...)
	return info
}

// startAgentInProcess is runAgentInProcess that also returns what the
// agent prints on stdout.
func startAgentInProcess(t *testing.T, dir string, args ...string) (node.IDInfo, *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan result, 1)
	var out syncBuffer
	go func() {
		var errw syncBuffer
		code := runContext(ctx, append([]string{"zorilla", "agent", "--data-dir", dir, "--listen", "/ip4/127.0.0.1/tcp/0", "--mdns=false"}, args...), &out, &errw)
		done <- result{code, out.String(), errw.String()}
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case r := <-done:
			if r.code != 0 || !strings.Contains(r.stdout, "stopping") {
				t.Errorf("agent did not stop cleanly: %v", r)
			}
		case <-time.After(20 * time.Second):
			t.Error("agent did not stop within 20s")
		}
	})
	var info node.IDInfo
	deadline := time.Now().Add(20 * time.Second)
	for {
		if cl, err := node.Dial(dir); err == nil {
			info, err = cl.ID(context.Background())
			cl.Close()
			if err == nil {
				return info, &out
			}
		}
		select {
		case r := <-done:
			t.Fatalf("agent exited: %v", r)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("agent socket never answered")
		}
	}
}

func TestAgentIDAndPeers(t *testing.T) {
	a, b := shortDataDir(t), shortDataDir(t)
	ida := runAgentInProcess(t, a)
	r := zorilla("id", "--data-dir", a)
	if r.code != 0 || !strings.HasPrefix(r.stdout, ida.ID.String()+"\n/ip4/127.0.0.1/tcp/") || !strings.Contains(r.stdout, "/p2p/"+ida.ID.String()) ||
		!strings.Contains(r.stdout, "\nnetwork zorilla\nreachability unknown\n") || !strings.HasSuffix(r.stdout, "\nweb off\n") {
		t.Fatalf("zorilla id: %v", r)
	}
	t.Setenv("ZORILLA_BOOTSTRAP", ida.Addrs[0])
	idb := runAgentInProcess(t, b, "--cores", "2", "--label", "gpu")
	peerLine := regexp.MustCompile(`(?m)^` + ida.ID.String() + `\s+[0-9.]+[µm]?s\s+near\s+direct$`)
	deadline := time.Now().Add(20 * time.Second)
	for {
		r = zorilla("peers", "--data-dir", b)
		if r.code == 0 && peerLine.MatchString(r.stdout) && strings.Contains(r.stdout, "1 neighbours, 1 peers known") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("zorilla peers never listed the bootstrap agent with an RTT: %v", r)
		}
		time.Sleep(50 * time.Millisecond) // polling interval
	}
	if idb.ID == ida.ID {
		t.Fatal("two agents share a peer ID")
	}
}

// TestIDSaysWhereTheWebViewIs: zorilla id ends with the view's address.
func TestIDSaysWhereTheWebViewIs(t *testing.T) {
	a := shortDataDir(t)
	info := runAgentInProcess(t, a, "--web", "127.0.0.1:0")
	r := zorilla("id", "--data-dir", a)
	if info.Web == "" || !strings.HasPrefix(info.Web, "http://127.0.0.1:") || r.code != 0 || !strings.HasSuffix(r.stdout, "\nweb "+info.Web+"\n") {
		t.Fatalf("zorilla id of an agent whose view is at %q: %v", info.Web, r)
	}
}

func TestClientsWithoutAgent(t *testing.T) {
	dir := t.TempDir()
	for _, cmd := range []string{"id", "peers"} {
		r := zorilla(cmd, "--data-dir", dir)
		if r.code != 1 || !strings.Contains(r.stderr, "agent is not running") || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%s without an agent: %v", cmd, r)
		}
		if r := zorilla(cmd, "--data-dir", dir, "extra"); r.code != 2 {
			t.Errorf("%s with an argument: %v", cmd, r)
		}
	}
	if r := zorilla("frobnicate"); r.code != 2 || !strings.Contains(r.stderr, `unknown command "frobnicate"`) {
		t.Errorf("unknown command: %v", r)
	}
	if r := zorilla("--frobnicate"); r.code != 2 {
		t.Errorf("unknown global flag: %v", r)
	}
}

// TestAgentSignals runs the real binary: SIGTERM and SIGINT stop it
// cleanly (exit 0, socket removed), and the restarted agent keeps its
// peer ID. Settings come from the environment only.
func TestAgentSignals(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := zorillaBinary(t)
	dir := shortDataDir(t)
	var first string
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		cmd := exec.Command(bin, "agent")
		cmd.Env = append(os.Environ(), "ZORILLA_DATA_DIR="+dir, "ZORILLA_LISTEN=/ip4/127.0.0.1/tcp/0,/ip4/127.0.0.1/udp/0/quic-v1", "ZORILLA_MDNS=false")
		var out syncBuffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		id := awaitSocket(t, dir)
		if first == "" {
			first = id
		} else if id != first {
			t.Fatalf("restart changed the peer ID: %s -> %s", first, id)
		}
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		if err := waitExit(cmd, 20*time.Second); err != nil {
			t.Fatalf("%v: %v\n%s", sig, err, out.String())
		}
		if _, err := os.Stat(filepath.Join(dir, node.SocketFile)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("socket left after %v: %v", sig, err)
		}
	}
}

func awaitSocket(t *testing.T, dir string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if cl, err := node.Dial(dir); err == nil {
			info, err := cl.ID(context.Background())
			cl.Close()
			if err == nil {
				return info.ID.String()
			}
		}
		time.Sleep(20 * time.Millisecond) // polling interval
	}
	t.Fatal("agent socket never answered")
	return ""
}

// waitExit waits for cmd, killing it after limit; a non-zero exit is an
// error.
func waitExit(cmd *exec.Cmd, limit time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		_ = cmd.Process.Kill()
		<-done
		return errors.New("did not exit in time")
	}
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"2G", "512MiB", "1.5g", "4096", "", "-1", "1e400T"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if n, err := parseSize(s); err == nil && n <= 0 {
			t.Fatalf("%q gave %d bytes", s, n)
		}
	})
}
