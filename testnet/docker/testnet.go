package docker

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/zorilla-p2p/zorilla/node"
)

// Errors of testnet operations.
var (
	ErrInvalidConfig = errors.New("docker: invalid config")
	ErrExists        = errors.New("docker: testnet already up")
	ErrNotUp         = errors.New("docker: testnet not up")
	ErrUnknownTarget = errors.New("docker: no such container or site")
)

// Shapers: how latency is put between containers.
const (
	// ShaperAuto is netem when the kernel has it, else transport; nfqueue
	// instead of transport when the agents run QUIC, which the transport
	// shaper does not delay.
	ShaperAuto      = "auto"
	ShaperNetem     = "netem"     // tc netem on each container's interfaces
	ShaperTransport = "transport" // each agent delays its own TCP sends (--testnet-delay)
	ShaperNFQueue   = "nfqueue"   // iptables NFQUEUE + a delay line in a helper container
	ShaperNone      = "none"      // no added latency
)

// File names in Config.Dir.
const (
	stateFile  = "testnet.json"
	delaysFile = "delays.json"
)

// Config is how a testnet is made and found again.
type Config struct {
	// Name prefixes every container and network and is the value of their
	// zorilla.testnet label; several testnets can run side by side.
	Name string
	// Dir is the host folder with the state file and one data dir per
	// agent (mounted at /data, so its agent.sock is reachable from here).
	Dir string
	// Image is the agent image's tag.
	Image string
	// LocalRTT is the RTT added between two agents of one site.
	LocalRTT time.Duration
	// Shaper is ShaperAuto, ShaperNetem, ShaperTransport, ShaperNFQueue
	// or ShaperNone.
	Shaper string
	// Seed draws which earlier container each one bootstraps from.
	Seed uint64
	// Parallel bounds the docker commands run at once.
	Parallel int
	// QUIC makes agents listen on QUIC as well as TCP.
	QUIC bool
	// AgentArgs are added to every agent's command line.
	AgentArgs []string
	// ReadyTimeout bounds the wait for each agent's control API.
	ReadyTimeout time.Duration
	// Docker is the docker command.
	Docker string
	// Log receives progress lines; nil discards them.
	Log io.Writer
}

// DefaultConfig is the testnet "zt" in ~/.zorilla-testnet/zt.
func DefaultConfig() Config {
	dir := filepath.Join(os.TempDir(), "zorilla-testnet")
	if home, err := os.UserHomeDir(); err == nil {
		dir = filepath.Join(home, ".zorilla-testnet")
	}
	return Config{
		Name: "zt",
		// Under the home folder: short enough for a unix socket path, and
		// kept across reboots like the containers' data.
		Dir:   filepath.Join(dir, "zt"),
		Image: DefaultImage,
		// The P2P-MPI paper's RTT inside a Grid'5000 site.
		LocalRTT: time.Millisecond,
		Shaper:   ShaperAuto,
		// TCP only: a request/answer exchange over QUIC fails at the
		// requester's Close when the answerer closed first (see
		// BENCHMARKS.md, containers); --quic turns it on.
		QUIC: false,
		Seed: 1,
		// Two cores: more concurrent docker commands only queue in dockerd.
		Parallel: 4,
		// An agent starts in well under a second; a loaded machine with a
		// hundred containers starting takes longer.
		ReadyTimeout: time.Minute,
		Docker:       "docker",
	}
}

// Network is the Zorilla network name of the testnet's agents,
// "testnet-" and its name: a testnet never joins strangers' agents, nor
// another testnet's.
func (c Config) Network() string {
	return "testnet-" + strings.ReplaceAll(strings.ToLower(c.Name), "_", "-")
}

// ForName is DefaultConfig with another name, in its own folder.
func ForName(name string) Config {
	c := DefaultConfig()
	c.Name = name
	c.Dir = filepath.Join(filepath.Dir(c.Dir), name)
	return c
}

func (c Config) validate() error {
	var errs []error
	if !validName(c.Name) || len(c.Name) > 16 {
		errs = append(errs, fmt.Errorf("name %q: want [A-Za-z][A-Za-z0-9_]* of at most 16", c.Name))
	}
	// The longest socket path: Dir/<site of 32>-<index of 3>/agent.sock.
	if c.Dir == "" || !filepath.IsAbs(c.Dir) || len(c.Dir)+1+maxNameLen+4+1+len(node.SocketFile) > 103 {
		errs = append(errs, fmt.Errorf("dir %q: want an absolute path short enough for the agents' unix sockets", c.Dir))
	}
	if c.Image == "" || c.Docker == "" {
		errs = append(errs, errors.New("image and docker command must be set"))
	}
	if c.LocalRTT < 0 || c.LocalRTT > maxRTT {
		errs = append(errs, fmt.Errorf("local RTT %v out of [0, %v]", c.LocalRTT, maxRTT))
	}
	switch c.Shaper {
	case ShaperAuto, ShaperNetem, ShaperTransport, ShaperNFQueue, ShaperNone:
	default:
		errs = append(errs, fmt.Errorf("shaper %q: want auto, netem, transport, nfqueue or none", c.Shaper))
	}
	if c.Shaper == ShaperTransport && c.QUIC {
		errs = append(errs, errors.New("the transport shaper delays TCP only: leave QUIC off or use the nfqueue shaper"))
	}
	if c.Parallel < 1 || c.ReadyTimeout <= 0 {
		errs = append(errs, fmt.Errorf("parallel %d and ready timeout %v must be positive", c.Parallel, c.ReadyTimeout))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
	}
	return nil
}

func (c Config) logf(format string, args ...any) {
	if c.Log != nil {
		fmt.Fprintf(c.Log, format+"\n", args...)
	}
}

// State is what Up made, kept in Dir/testnet.json for the other commands.
type State struct {
	Name       string        `json:"name"`
	Image      string        `json:"image"`
	Layout     Layout        `json:"layout"`
	Addrs      AddrPlan      `json:"addrs"`
	LocalRTT   time.Duration `json:"local_rtt"`
	Shaper     string        `json:"shaper"` // netem, transport, nfqueue or none: what was used
	QUIC       bool          `json:"quic"`
	Containers []Container   `json:"containers"`
}

// Testnet is a testnet that is up, as its state file describes it.
type Testnet struct {
	cfg    Config
	st     State
	docker dockerCLI
}

// Open finds the testnet of cfg from its state file.
func Open(cfg Config) (*Testnet, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(cfg.Dir, stateFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: no %s in %s", ErrNotUp, stateFile, cfg.Dir)
	}
	if err != nil {
		return nil, fmt.Errorf("docker: read state: %w", err)
	}
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("docker: state %s is corrupt: %w", filepath.Join(cfg.Dir, stateFile), err)
	}
	if st.Name != cfg.Name {
		return nil, fmt.Errorf("docker: state in %s is of testnet %q, not %q", cfg.Dir, st.Name, cfg.Name)
	}
	return &Testnet{cfg: cfg, st: st, docker: dockerCLI{cfg.Docker}}, nil
}

// State returns what the testnet is made of.
func (t *Testnet) State() State { return t.st }

// Containers returns the agent containers, in order.
func (t *Testnet) Containers() []Container { return append([]Container(nil), t.st.Containers...) }

// Client dials the control API of agent container i from the host.
func (t *Testnet) Client(i int) (*node.Client, error) {
	if i < 0 || i >= len(t.st.Containers) {
		return nil, fmt.Errorf("%w: container %d of %d", ErrUnknownTarget, i, len(t.st.Containers))
	}
	return node.Dial(t.st.Containers[i].DataDir)
}

func (t *Testnet) saveState() error {
	return writeJSONFile(filepath.Join(t.cfg.Dir, stateFile), t.st)
}

// writeJSONFile writes v to path atomically (temporary file, rename), so
// the delayer never reads half a file.
func writeJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("docker: encode %s: %w", filepath.Base(path), err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("docker: write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("docker: write %s: %w", path, err)
	}
	return nil
}

func (t *Testnet) labelFilter() string { return "label=" + LabelTestnet + "=" + t.cfg.Name }

func (t *Testnet) netName(site string) string { return t.cfg.Name + "-" + site }

func (t *Testnet) wanName() string { return t.cfg.Name + "-wan" }

func (t *Testnet) delayerName() string { return t.cfg.Name + "-delayer" }
