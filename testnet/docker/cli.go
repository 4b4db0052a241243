package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
)

// ErrNoDocker means no docker engine answers, or a host tool is missing.
var ErrNoDocker = errors.New("docker: no docker engine or host tool")

// maxOutput bounds what is kept of a command's output.
const maxOutput = 1 << 20

// dockerCLI runs the docker command line: the engine's API without a Go
// module, and what a person would type to look at the same containers.
type dockerCLI struct{ bin string }

// run runs docker with args and returns its stdout, trimmed. The error
// carries stderr.
func (d dockerCLI) run(ctx context.Context, args ...string) (string, error) {
	return runTool(ctx, d.bin, args...)
}

// lines runs docker and splits its output into non-empty lines.
func (d dockerCLI) lines(ctx context.Context, args ...string) ([]string, error) {
	out, err := d.run(ctx, args...)
	if err != nil {
		return nil, err
	}
	var ls []string
	for l := range strings.SplitSeq(out, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			ls = append(ls, l)
		}
	}
	return ls, nil
}

// pid is the host PID of a running container's first process.
func (d dockerCLI) pid(ctx context.Context, name string) (int, error) {
	out, err := d.run(ctx, "inspect", "-f", "{{.State.Pid}}", name)
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(out)
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("docker: %s is not running (pid %q)", name, out)
	}
	return pid, nil
}

// runTool runs a host command and returns its trimmed stdout; the error
// names the command and carries its stderr.
func runTool(ctx context.Context, bin string, args ...string) (string, error) {
	var stdout, stderr limitedBuffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %w: %s", bin, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// nsenterRun runs a host tool (tc, iptables, ip) inside the network
// namespace of process pid: the image has none of them.
func nsenterRun(ctx context.Context, pid int, argv ...string) (string, error) {
	return runTool(ctx, "nsenter", append([]string{"-t", strconv.Itoa(pid), "-n", "--"}, argv...)...)
}

// limitedBuffer keeps the first maxOutput bytes written to it.
type limitedBuffer struct{ bytes.Buffer }

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := maxOutput - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// forEach runs f(0) .. f(n-1), at most parallel at once, and joins their
// errors. It stops starting new calls once ctx is done.
func forEach(ctx context.Context, n, parallel int, f func(i int) error) error {
	sem := make(chan struct{}, max(parallel, 1))
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for i := range n {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return errors.Join(append(errs, ctx.Err())...)
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := f(i); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// checkTools checks that the docker engine answers and that the host has
// the tools the testnet runs in containers' namespaces.
func checkTools(ctx context.Context, d dockerCLI, tools ...string) error {
	if _, err := d.run(ctx, "info", "--format", "{{.ServerVersion}}"); err != nil {
		return fmt.Errorf("%w: docker info: %w", ErrNoDocker, err)
	}
	for _, t := range tools {
		if _, err := exec.LookPath(t); err != nil {
			return fmt.Errorf("%w: %s is missing on this host (apt-get install %s)", ErrNoDocker, t, packageOf[t])
		}
	}
	return nil
}

// packageOf names the Debian package of each host tool.
var packageOf = map[string]string{"nsenter": "util-linux", "tc": "iproute2", "ip": "iproute2", "iptables": "iptables"}
