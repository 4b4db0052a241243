package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/node"
)

// Agents that decline a job say why, and submit --dry-run, a failed
// submit and status put it in words; `zorilla trust add` on a worker makes
// it offer at once.
func TestDryRunSaysWhyAgentsDecline(t *testing.T) {
	nodes := agentsWith(t, 5, 1, func(i int, cfg *node.Config) {
		switch i {
		case 1:
			cfg.Open = false // trust by default: it runs only its own jobs
		case 2:
			cfg.Memory = 512 << 20 // less than the job asks
		}
	})
	dd := nodes[0].Config().DataDir
	sub := nodes[0].ID().String()
	if r := zorilla("trust", "add", "--data-dir", nodes[4].Config().DataDir, sub, "--deny"); r.code != 0 || !strings.Contains(r.stdout, "except 1 denied one") {
		t.Fatalf("trust add --deny: %v", r)
	}
	prog := script(t, `echo never runs`)
	r := zorilla("submit", "--data-dir", dd, "--dry-run", "--deadline", "3s", "--require", "mem=1G", "-n", "5", prog)
	const want = "5 agents saw the advert: 2 offered 2 slots, 2 do not allow you, 1 lacks mem=1G"
	if r.code != 1 || !strings.Contains(r.stdout, want) {
		t.Fatalf("dry run does not say %q: %v", want, r)
	}
	st := zorilla("status", "--data-dir", dd, jobIDIn(t, r.stderr))
	if !strings.Contains(st.stdout, "advert") || !strings.Contains(st.stdout, want) {
		t.Errorf("status does not say why:\n%s", st.stdout)
	}
	r = zorilla("submit", "--data-dir", dd, "--deadline", "3s", "--require", "mem=1G", "-n", "5", prog)
	if r.code == 0 || !strings.Contains(r.stderr, "not enough resources") || !strings.Contains(r.stderr, want) {
		t.Errorf("a job nobody can place does not say why: %v", r)
	}
	// Allowed now, agent 1 offers without a restart.
	if r := zorilla("trust", "add", "--data-dir", nodes[1].Config().DataDir, sub); r.code != 0 || !strings.Contains(r.stdout, "allow  "+sub) {
		t.Fatalf("trust add: %v", r)
	}
	r = zorilla("submit", "--data-dir", dd, "--dry-run", "--deadline", "3s", "--require", "mem=1G", "-n", "3", prog)
	if r.code != 0 || !strings.Contains(r.stdout, nodes[1].ID().String()) || !strings.Contains(r.stdout, "feasible: n=3") {
		t.Errorf("agent 1 does not offer after trust add: %v", r)
	}
}

// `zorilla trust` refuses what is not a peer ID, and an unknown list edit,
// with one line and exit 2; list prints whom the agent accepts.
func TestTrustCommand(t *testing.T) {
	nodes := agentsWith(t, 1, 1, func(_ int, cfg *node.Config) { cfg.Open = false })
	dd := nodes[0].Config().DataDir
	r := zorilla("trust", "list", "--data-dir", dd)
	if r.code != 0 || !strings.Contains(r.stdout, "accepting jobs from this agent and 0 allowed submitters") {
		t.Fatalf("trust list: %v", r)
	}
	for _, args := range [][]string{
		{"trust", "add", "not-a-peer"},
		{"trust", "add"},
		{"trust", "remove", "a", "b"},
		{"trust", "list", "extra"},
	} {
		r := zorilla(append(args[:2:2], append([]string{"--data-dir", dd}, args[2:]...)...)...)
		if r.code != 2 || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%q: want exit 2 and one line, got %v", args, r)
		}
	}
	if _, err := os.Stat(filepath.Join(dd, node.AllowFileName)); err == nil {
		t.Error("bad edits wrote the allow file")
	}
}

// SIGHUP makes the agent read its lists again; a list that does not parse
// is reported and the lists in force stay.
func TestAgentReloadsTrustOnSIGHUP(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := zorillaBinary(t)
	dir := shortDataDir(t)
	cmd := exec.Command(bin, "agent", "--data-dir", dir, "--listen", "/ip4/127.0.0.1/tcp/0", "--mdns=false")
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	awaitSocket(t, dir)
	_, pub, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	peerID := id.String()
	if err := os.WriteFile(filepath.Join(dir, node.AllowFileName), []byte(peerID+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the reloaded allow list is in force", func() bool {
		return strings.Contains(zorilla("trust", "list", "--data-dir", dir).stdout, "allow  "+peerID)
	})
	if err := os.WriteFile(filepath.Join(dir, node.AllowFileName), []byte("garbage\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the agent says the broken list is not taken", func() bool {
		return strings.Contains(out.String(), "the lists in force are unchanged")
	})
	if r := zorilla("trust", "list", "--data-dir", dir); !strings.Contains(r.stdout, "allow  "+peerID) {
		t.Fatalf("a broken list replaced the one in force: %v", r)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := waitExit(cmd, 20*time.Second); err != nil {
		t.Fatalf("agent did not stop: %v\n%s", err, out.String())
	}
}
