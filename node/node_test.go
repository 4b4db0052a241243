package node

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	mocknet "github.com/libp2p/go-libp2p/p2p/net/mock"

	"github.com/zorilla-p2p/zorilla/overlay"
)

func testConfig(dataDir string) Config {
	c := DefaultConfig()
	c.DataDir = dataDir
	c.Listen = []string{"/ip4/127.0.0.1/tcp/0", "/ip4/127.0.0.1/udp/0/quic-v1"}
	c.Overlay = overlay.FastConfig()
	c.ShutdownTimeout = time.Second
	return c
}

func startNode(t *testing.T, cfg Config, opts ...Option) *Node {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := New(ctx, cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	return n
}

// shortDir is a data dir whose socket path fits the unix limit.
func shortDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "zn")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func TestNodeAPIAndRestart(t *testing.T) {
	dir := shortDir(t)
	n := startNode(t, testConfig(dir))
	sock := filepath.Join(dir, SocketFile)
	if info, err := os.Stat(sock); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("socket: %v mode %v, want 0600", err, info.Mode().Perm())
	}
	ctx := context.Background()
	c, err := Dial(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	id, err := c.ID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if id.ID != n.ID() || len(id.Addrs) != 2 {
		t.Fatalf("id %+v, want %s with a TCP and a QUIC address", id, n.ID())
	}
	for _, a := range id.Addrs {
		if !strings.HasSuffix(a, "/p2p/"+n.ID().String()) {
			t.Fatalf("address %s lacks /p2p/", a)
		}
	}
	peers, err := c.Peers(ctx)
	if err != nil || peers.Known != 0 || len(peers.Neighbours) != 0 {
		t.Fatalf("peers of a lone agent: %+v, %v", peers, err)
	}
	var apiErr *APIError
	if err := c.Do(ctx, http.MethodGet, "/v1/nope", nil, nil); !errors.As(err, &apiErr) || apiErr.Status != 404 {
		t.Fatalf("unknown route: %v", err)
	}

	if _, err := New(ctx, testConfig(dir)); !errors.Is(err, ErrRunning) {
		t.Fatalf("second agent on the data dir: %v, want ErrRunning", err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Fatalf("socket left after Close: %v", err)
	}
	if _, err := c.ID(ctx); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("client of a stopped agent: %v, want ErrNotRunning", err)
	}
	if _, err := Dial(dir); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("Dial of a stopped agent: %v, want ErrNotRunning", err)
	}

	// A socket left behind by a crash is replaced; the peer ID stays.
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	again := startNode(t, testConfig(dir))
	if again.ID() != n.ID() {
		t.Fatalf("restart changed the peer ID: %s -> %s", n.ID(), again.ID())
	}
}

func TestNodeBootstrapAndRoutes(t *testing.T) {
	a := startNode(t, testConfig(""))
	cfg := testConfig("")
	for _, addr := range a.Addrs() {
		cfg.Bootstrap = append(cfg.Bootstrap, addr.String())
	}
	b := startNode(t, cfg)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, ok := b.Overlay().RTT(a.ID()); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("b never measured its bootstrap peer")
		}
		time.Sleep(20 * time.Millisecond)
	}

	b.Handle("GET /v1/echo/{word}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, 200, map[string]string{"word": r.PathValue("word")})
	}))
	rec := httptest.NewRecorder()
	b.API().ServeHTTP(rec, httptest.NewRequest("GET", "/v1/echo/hi", nil))
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"hi"`) {
		t.Fatalf("service route: %d %s", rec.Code, rec.Body)
	}
	rec = httptest.NewRecorder()
	b.API().ServeHTTP(rec, httptest.NewRequest("GET", "/v1/peers", nil))
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"known":1`) {
		t.Fatalf("peers: %d %s", rec.Code, rec.Body)
	}
}

func TestNodeUnreachableBootstrapIsNotFatal(t *testing.T) {
	cfg := testConfig("")
	// A peer ID nobody has, on a port nobody listens on.
	cfg.Bootstrap = []string{"/ip4/127.0.0.1/tcp/1/p2p/12D3KooWLRPJAA5o6Cj9GDcC5AjByEEKjy1k3ZXgtU3K4E3vTnBR"}
	startNode(t, cfg)
}

func TestNodeCloseOrderAndHooks(t *testing.T) {
	mn := mocknet.New()
	t.Cleanup(func() { _ = mn.Close() })
	h, err := mn.GenPeer()
	if err != nil {
		t.Fatal(err)
	}
	n := startNode(t, testConfig(""), WithHost(h))
	if n.ID() != h.ID() {
		t.Fatal("WithHost: the node does not use the host's identity")
	}
	var order []string
	n.OnClose(func() error { order = append(order, "first"); return nil })
	n.OnClose(func() error { order = append(order, "second"); return errors.New("boom") })
	if err := n.Close(); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("Close: %v, want the hook's error", err)
	}
	if !slices.Equal(order, []string{"second", "first"}) {
		t.Fatalf("hooks ran %v, want reverse order", order)
	}
	ran := false
	n.OnClose(func() error { ran = true; return nil })
	if !ran {
		t.Fatal("a hook added after Close did not run")
	}
}

func TestNodeStartErrors(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o600)
	long := filepath.Join(t.TempDir(), strings.Repeat("d", 120))

	for name, tc := range map[string]struct {
		cfg  Config
		want error
	}{
		"data dir is a file":   {testConfig(file), ErrDataDir},
		"socket path too long": {testConfig(long), ErrDataDir},
		"bad bootstrap":        {func() Config { c := testConfig(""); c.Bootstrap = []string{"x"}; return c }(), ErrInvalidConfig},
		"missing deny file":    {func() Config { c := testConfig(""); c.DenyFile = file + ".nope"; return c }(), ErrInvalidConfig},
	} {
		if n, err := New(ctx, tc.cfg); !errors.Is(err, tc.want) {
			if n != nil {
				n.Close()
			}
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
}
