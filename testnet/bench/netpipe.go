package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/zorilla-p2p/zorilla/testnet/localnet"
)

// netpipeTimeout bounds one NetPIPE run of one size: they take a second
// or two (Open MPI's start-up included).
const netpipeTimeout = 2 * time.Minute

// retryEvery is how often the NPtcp transmitter tries to reach its
// receiver.
const retryEvery = 50 * time.Millisecond

// netpipeTarget is NetPIPE measuring one size at a time (-l S -u S -p 0:
// that size only, no perturbed sizes), its output file read back.
type netpipeTarget struct {
	label string
	dir   string // scratch folder of its output files
	run   func(ctx context.Context, size int, out string) error
}

func (n *netpipeTarget) name() string { return n.label }

// measure runs NetPIPE once per size.
func (n *netpipeTarget) measure(ctx context.Context, sizes []int) (map[int]figure, error) {
	figs := make(map[int]figure, len(sizes))
	for _, size := range sizes {
		out := filepath.Join(n.dir, fmt.Sprintf("%s-%d.out", strings.ReplaceAll(n.label, " ", "-"), size))
		_ = os.Remove(out)
		rctx, cancel := context.WithTimeout(ctx, netpipeTimeout)
		err := n.run(rctx, size, out)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("%d bytes: %w", size, err)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			return nil, fmt.Errorf("%d bytes: its output: %w", size, err)
		}
		if figs[size], err = parseNetpipe(b, size); err != nil {
			return nil, fmt.Errorf("%d bytes: %w", size, err)
		}
	}
	return figs, nil
}

// parseNetpipe reads the line of size from NetPIPE's output file, whose
// lines are: bytes, throughput (Mbps), time of a one-way trip (seconds).
func parseNetpipe(out []byte, size int) (figure, error) {
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 {
			continue
		}
		if n, err := strconv.Atoi(f[0]); err != nil || n != size {
			continue
		}
		secs, err := strconv.ParseFloat(f[2], 64)
		if err != nil || !(secs > 0) || secs > 1e6 {
			return figure{}, fmt.Errorf("NetPIPE output: time %q of %d bytes is not a positive number of seconds", f[2], size)
		}
		return figure{latencyUS: secs * 1e6, mbps: float64(size) / secs / 1e6}, nil
	}
	return figure{}, fmt.Errorf("NetPIPE output has no line for %d bytes: %q", size, lastLines(string(out), 5))
}

// netpipeTargets are NPtcp and NPmpi where installed; the others are series
// saying why they are missing.
func netpipeTargets(dir string, lookPath func(string) (string, error)) ([]target, []*series) {
	var targets []target
	var missing []*series
	if bin, err := lookPath("NPtcp"); err == nil {
		targets = append(targets, &netpipeTarget{label: "NetPIPE TCP", dir: dir, run: func(ctx context.Context, size int, out string) error {
			return npTCP(ctx, bin, size, out)
		}})
	} else {
		missing = append(missing, &series{name: "NetPIPE TCP", note: "not installed (NPtcp: apt-get install netpipe-tcp)"})
	}
	mpirun, err1 := lookPath("mpirun")
	bin, err2 := lookPath("NPmpi")
	if err2 != nil {
		bin, err2 = lookPath("NPopenmpi") // Debian's name
	}
	if err1 == nil && err2 == nil {
		targets = append(targets, &netpipeTarget{label: "NetPIPE MPI", dir: dir, run: func(ctx context.Context, size int, out string) error {
			return npMPI(ctx, mpirun, bin, size, out)
		}})
	} else {
		missing = append(missing, &series{name: "NetPIPE MPI", note: "not installed (mpirun, NPmpi: apt-get install netpipe-openmpi openmpi-bin)"})
	}
	return targets, missing
}

// npArgs are NetPIPE's options for one size written to out.
func npArgs(size int, out string) []string {
	s := strconv.Itoa(size)
	return []string{"-l", s, "-u", s, "-p", "0", "-o", out}
}

// npMPI runs NPmpi on two ranks of this machine under mpirun, with Open
// MPI's TCP transport on loopback only (it skips 127.0.0.1 unless told).
func npMPI(ctx context.Context, mpirun, bin string, size int, out string) error {
	args := append([]string{"-np", "2", "--oversubscribe", "--mca", "pml", "ob1", "--mca", "btl", "tcp,self", bin},
		npArgs(size, out)...)
	cmd := childCommand(ctx, mpirun, args...)
	cmd.Env = append(os.Environ(), "OMPI_MCA_btl_tcp_if_include=127.0.0.0/8", "OMPI_MCA_oob_tcp_if_include=127.0.0.0/8")
	if os.Geteuid() == 0 {
		cmd.Env = append(cmd.Env, "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
	}
	cmd.Dir = filepath.Dir(out)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("mpirun %s: %w\n%s", filepath.Base(bin), err, lastLines(string(b), 10))
	}
	return nil
}

// npTCP runs an NPtcp receiver on a free loopback port, then the
// transmitter, which writes out. The transmitter does not wait for the
// receiver to listen: it is tried again while it cannot connect.
func npTCP(ctx context.Context, bin string, size int, out string) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	p := strconv.Itoa(port)
	recv := childCommand(ctx, bin, append([]string{"-P", p}, npArgs(size, out+".recv")...)...)
	recv.Dir = filepath.Dir(out)
	var recvOut bytes.Buffer
	recv.Stdout, recv.Stderr = &recvOut, &recvOut
	if err := recv.Start(); err != nil {
		return fmt.Errorf("start the NPtcp receiver: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- recv.Wait() }()
	err = npTransmit(ctx, bin, p, size, out, exited)
	if err != nil {
		_ = recv.Cancel()
	}
	select {
	case <-exited:
	case <-time.After(childStopGrace):
		_ = recv.Process.Kill()
		<-exited
	}
	if err != nil {
		return fmt.Errorf("%w; the receiver said: %s", err, lastLines(recvOut.String(), 5))
	}
	return nil
}

// npTransmit runs the NPtcp transmitter against the receiver on port until
// it connects, for at most childStartWait.
func npTransmit(ctx context.Context, bin, port string, size int, out string, recvExited <-chan error) error {
	deadline := time.Now().Add(childStartWait)
	for {
		cmd := childCommand(ctx, bin, append([]string{"-h", "127.0.0.1", "-P", port}, npArgs(size, out)...)...)
		cmd.Dir = filepath.Dir(out)
		b, err := cmd.CombinedOutput()
		if err == nil {
			return nil
		}
		if !bytes.Contains(b, []byte("Cannot Connect")) || time.Now().After(deadline) {
			return fmt.Errorf("NPtcp transmitter: %w\n%s", err, lastLines(string(b), 10))
		}
		select {
		case err := <-recvExited:
			return fmt.Errorf("the NPtcp receiver on port %s exited (%v) before the transmitter connected", port, err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(retryEvery):
		}
	}
}

// freePort is a loopback TCP port free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		return 0, fmt.Errorf("find a free port: %v is not a TCP address", l.Addr())
	}
	return addr.Port, nil
}

// childCommand is a command that ctx ends with SIGTERM (so that mpirun
// stops its ranks), then SIGKILL after childStopGrace; in its own process
// group like the agents, so that a Ctrl-C reaches only the bench.
func childCommand(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = childStopGrace
	cmd.SysProcAttr = localnet.ProcAttr()
	return cmd
}
