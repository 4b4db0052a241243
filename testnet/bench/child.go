package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/zorilla-p2p/zorilla/testnet/localnet"
)

// Bounds of the bench's helper processes.
const (
	// childStartWait: a helper prints its address at once; 20 s allows
	// for a loaded machine.
	childStartWait = localnet.StartWait
	// childStopGrace: a helper whose stdin closed ends at once; after
	// this it is killed.
	childStopGrace = localnet.StopGrace
)

// benchChild is a helper process of the bench (`zorilla bench echo` or
// `bench relay`). It prints one line when it is ready, and ends when its
// stdin closes.
type benchChild struct {
	what   string // for errors: "echo process"
	cmd    *exec.Cmd
	stdin  io.Closer
	exited chan struct{}
	err    error // why the child ended, once exited is closed
	log    string
}

// startChild runs the zorilla binary exe with args, its stderr in log,
// and returns the first line it prints (an address).
func startChild(exe, log, what string, args ...string) (*benchChild, string, error) {
	logf, err := os.OpenFile(log, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, "", fmt.Errorf("%s log: %w", what, err)
	}
	defer logf.Close() // the child has its own copy
	ch := &benchChild{what: what, log: log, exited: make(chan struct{})}
	line := &firstLine{ch: make(chan string, 1)}
	ch.cmd = exec.Command(exe, args...)
	ch.cmd.Stdout, ch.cmd.Stderr = line, logf
	ch.cmd.Env = localnet.AgentEnv(os.Environ())
	ch.cmd.SysProcAttr = localnet.ProcAttr()
	stdin, err := ch.cmd.StdinPipe()
	if err != nil {
		return nil, "", fmt.Errorf("%s stdin: %w", what, err)
	}
	if err := ch.cmd.Start(); err != nil {
		return nil, "", fmt.Errorf("start the %s: %w", what, err)
	}
	ch.stdin = stdin
	go func() {
		ch.err = ch.cmd.Wait()
		close(ch.exited)
	}()
	select {
	case addr := <-line.ch:
		return ch, addr, nil
	case <-ch.exited:
		ch.close()
		return nil, "", fmt.Errorf("the %s exited (%v); its log %s:\n%s", what, ch.err, log, localnet.LogTail(log))
	case <-time.After(childStartWait):
		ch.close()
		return nil, "", fmt.Errorf("the %s printed no address within %v; its log %s:\n%s", what, childStartWait, log, localnet.LogTail(log))
	}
}

// close ends the child: its stdin closes, then after childStopGrace it is
// killed. It returns once the child has ended.
func (ch *benchChild) close() {
	if ch == nil {
		return
	}
	_ = ch.stdin.Close()
	select {
	case <-ch.exited:
	case <-time.After(childStopGrace):
		_ = ch.cmd.Process.Kill()
		<-ch.exited
	}
}

// untilStdinCloses returns when the bench closes the child's stdin (or
// dies), or on Ctrl-C.
func untilStdinCloses(ctx context.Context, stdin io.Reader) {
	closed := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, stdin)
		close(closed)
	}()
	select {
	case <-closed:
	case <-ctx.Done():
	}
}

// firstLine is a writer that hands the first line written to it to ch
// and drops the rest.
type firstLine struct {
	mu   sync.Mutex
	buf  []byte
	ch   chan string // buffered, one line
	done bool
}

func (f *firstLine) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.done {
		return len(p), nil
	}
	f.buf = append(f.buf, p...)
	if i := bytes.IndexByte(f.buf, '\n'); i >= 0 {
		f.ch <- string(bytes.TrimSpace(f.buf[:i]))
		f.done, f.buf = true, nil
	} else if len(f.buf) > 4096 {
		f.done, f.buf = true, nil // not an address; spawn times out and shows the log
	}
	return len(p), nil
}
