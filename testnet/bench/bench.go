package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/zorilla-p2p/zorilla/testnet/localnet"
)

// Example is the program the bench builds when Config.Program is empty.
const Example = "pingpong"

// Config is what a bench measures.
type Config struct {
	Sizes  []int // reported, ascending; the sweep goes to the last
	Rounds int
	Raw    bool // the raw libp2p stream
	Relay  bool // the relay chain
	// ShmRelay adds the shm relay chain: the relay chain with a ring
	// pair in shared memory between each rank and its relay.
	ShmRelay bool
	ShmPoll  time.Duration // how long the shm relay chain's waits poll before they sleep
	NetPIPE  bool          // NetPIPE over TCP and Open MPI, where installed
	// Colocated adds two ranks on one agent, and NetPIPE between two
	// processes of this machine, with their own ratios.
	Colocated bool
	Program   string        // run this instead of building Example
	Timeout   time.Duration // wall-clock limit of each ping-pong job
	// Binary is the zorilla binary the echo and relay children run; this
	// process's own executable when empty.
	Binary string
}

// target is one configuration the bench measures.
type target interface {
	name() string
	// measure runs the ping-pong once and returns figures for at least
	// sizes (ascending).
	measure(ctx context.Context, sizes []int) (map[int]figure, error)
}

// benchRun is a target and what it gave so far.
type benchRun struct {
	target   target
	series   *series
	optional bool // a failure is noted in the table and the others go on
}

// Run starts the agents of net and the other configurations, then runs
// the rounds, saying what it does on log. After an error it returns the
// rounds completed so far.
func Run(ctx context.Context, cfg Config, net *localnet.Net, log io.Writer) (*Results, error) {
	prog, err := net.Program(ctx, cfg.Program, Example)
	if err != nil {
		return nil, err
	}
	if cfg.Binary == "" {
		if cfg.Binary, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("find the zorilla binary: %w", err)
		}
	}
	slots := 1 // one slot each: rank 0 on a0, rank 1 on a1
	if cfg.Colocated {
		slots = 2 // and both on one agent for the co-located rows
	}
	if err := net.Up(ctx, 2, slots); err != nil {
		return nil, err
	}
	z := &zorillaTarget{cl: net.Agents()[0].Client, prog: prog, timeout: cfg.Timeout}
	runs, local, missing, closeAll, err := startTargets(ctx, cfg, z, net.Dir(), log)
	defer closeAll()
	if err != nil {
		return nil, err
	}
	res := &Results{}
	for _, r := range runs {
		r.series = &series{name: r.target.name()}
		res.series = append(res.series, r.series)
	}
	res.series = append(res.series, missing...)
	for _, r := range local { // their series are made, with their base
		runs = append(runs, r)
		res.series = append(res.series, r.series)
	}
	for i := range cfg.Rounds {
		took, err := round(ctx, runs, i, cfg.Sizes, log)
		if err != nil {
			return res, fmt.Errorf("round %d: %w", i+1, err)
		}
		res.Rounds = i + 1
		fmt.Fprintf(log, "zorilla bench: round %d/%d: %s\n", i+1, cfg.Rounds, took)
	}
	return res, nil
}

// startTargets starts the configurations cfg asks for besides z: those to
// run, the co-located ones (whose series are made), and series saying why
// others are missing. closeAll ends what was started, also after an error.
func startTargets(ctx context.Context, cfg Config, z *zorillaTarget, dir string, log io.Writer) (runs, local []*benchRun, missing []*series, closeAll func(), err error) {
	var closers []func()
	closeAll = func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	runs = []*benchRun{{target: z}}
	if cfg.Raw {
		raw, err := startRaw(ctx, cfg.Binary, dir)
		if err != nil {
			return nil, nil, nil, closeAll, err
		}
		closers = append(closers, raw.close)
		fmt.Fprintf(log, "zorilla bench: raw libp2p stream to an echo process over %s\n", raw.describe())
		runs = append(runs, &benchRun{target: raw})
	}
	if cfg.Relay {
		relay, err := startRelay(cfg.Binary, dir)
		if err != nil {
			return nil, nil, nil, closeAll, err
		}
		closers = append(closers, relay.close)
		fmt.Fprintf(log, "zorilla bench: relay chain: this process -> unix socket -> relay -> %s -> relay -> unix socket -> echo process\n",
			relay.describe())
		runs = append(runs, &benchRun{target: relay})
	}
	if cfg.ShmRelay {
		shm, err := startShmRelay(cfg.Binary, dir, cfg.ShmPoll)
		if err != nil {
			return nil, nil, nil, closeAll, err
		}
		closers = append(closers, shm.close)
		fmt.Fprintf(log, "zorilla bench: shm relay chain: this process -> shared-memory rings -> relay -> %s -> relay -> shared-memory rings -> echo process (waits poll %v)\n",
			shm.describe(), cfg.ShmPoll)
		runs = append(runs, &benchRun{target: shm})
	}
	if cfg.NetPIPE {
		targets, absent := netpipeTargets(dir, exec.LookPath)
		for _, t := range targets {
			runs = append(runs, &benchRun{target: t, optional: true})
		}
		missing = absent
	}
	if cfg.Colocated {
		var absent []*series
		local, absent = colocatedRuns(z, dir, exec.LookPath)
		missing = append(missing, absent...)
	}
	return runs, local, missing, closeAll, nil
}

// round runs every configuration once, back to back, and says how long
// each took. An optional one that fails is left out of the next rounds.
func round(ctx context.Context, runs []*benchRun, i int, sizes []int, log io.Writer) (string, error) {
	var took []string
	for _, r := range runs {
		if r.series.note != "" {
			continue
		}
		t0 := time.Now()
		figs, err := r.target.measure(ctx, sizes)
		if err == nil {
			r.series.add(i, figs)
			took = append(took, fmt.Sprintf("%s %v", r.series.name, since(t0)))
			continue
		}
		if !r.optional || ctx.Err() != nil {
			return "", fmt.Errorf("%s: %w", r.series.name, err)
		}
		r.series.note = "failed (its error is on stderr)"
		fmt.Fprintf(log, "zorilla bench: %s failed, left out from now on: %v\n", r.series.name, err)
	}
	return strings.Join(took, ", "), nil
}

func since(t time.Time) time.Duration { return time.Since(t).Round(time.Millisecond) }
