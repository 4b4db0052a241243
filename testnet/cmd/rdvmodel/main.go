// Command rdvmodel models what a Zorilla network asks of the public DHT it
// meets through, against the network's size: lookups of its rendezvous
// key per second, announcements per second, provider records under the
// key, the size of one DHT server's answer to a lookup, and what that
// makes at each of the ~20 servers closest to the key (every lookup ends
// there, every announcement is stored there): requests per second, and
// inbound connections held if each lasts Kubo's 20 s connection-manager
// grace period.
//
// The rule agents follow (overlay.RendezvousConfig's NextLookup and
// ShouldProvide, the functions the agents run) is simulated: a seeded
// discrete-event run of every agent, each restarting now and then, over
// two days before a measured day. The former rule (every agent announces
// itself every 6 h and looks up every 30 s) is a formula. It prints a
// Markdown table for BENCHMARKS.md:
//
//	go run ./testnet/cmd/rdvmodel
package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/zorilla-p2p/zorilla/overlay"
)

// graceHold is Kubo's connection-manager grace period (Swarm.ConnMgr.GracePeriod
// default): a new inbound connection is not trimmed before it.
const graceHold = 20 * time.Second

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "rdvmodel:", err)
		os.Exit(2)
	}
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("rdvmodel", flag.ContinueOnError)
	sizes := fs.String("sizes", "100,1000,10000,100000", "network sizes, comma-separated")
	p := params{settle: 5 * time.Minute, down: time.Minute, warm: 48 * time.Hour}
	fs.DurationVar(&p.fill, "fill", 5*time.Second, "from a lookup that reached an agent to knowing enough live peers")
	fs.Float64Var(&p.dialable, "dialable", 0.5, "share of agents others can dial directly (or through a relay slot)")
	fs.DurationVar(&p.session, "session", 24*time.Hour, "mean time between restarts of an agent")
	fs.Float64Var(&p.noise, "noise", 0.5, "spread of each agent's size estimate: n*exp(noise*z), z normal")
	fs.DurationVar(&p.window, "window", 24*time.Hour, "simulated time measured, after two days")
	fs.Uint64Var(&p.seed, "seed", 1, "seed of the simulation")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ns, err := parseSizes(*sizes)
	if err != nil {
		return err
	}
	if !(p.dialable > 0 && p.dialable <= 1) || p.session <= p.down || p.noise < 0 || p.window <= 0 || p.fill < 0 {
		return fmt.Errorf("want -dialable in (0, 1], -session over %v, -noise >= 0, -window > 0, -fill >= 0", p.down)
	}
	cfg := overlay.DefaultRendezvousConfig(overlay.DefaultNetwork, nil)
	fmt.Fprintf(out, "%s agents dialable, restarting every %v on average, with enough peers %v after a lookup that reached one, "+
		"size estimates within x%.2f-%.2f (one sigma); %v measured after two days, seed %d.\n\n",
		strconv.FormatFloat(100*p.dialable, 'f', -1, 64)+"%", p.session, p.fill, 1/math.Exp(p.noise), math.Exp(p.noise), p.window, p.seed)
	fmt.Fprintln(out, "| agents | rule | lookups/s of the key (of which heal) | announcements/s | records under the key | answer to one lookup | requests/s at each closest server | connections held there | starts whose first lookup reached an agent |")
	fmt.Fprintln(out, "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, n := range ns {
		p.n = n
		fmt.Fprintln(out, formerRow(n, p.session))
		fmt.Fprintln(out, currentRow(n, simulate(p, cfg)))
	}
	return nil
}

// formerRow is the former rule: every agent announces itself every 6 h
// (and at each start) and looks up every 30 s.
func formerRow(n int, session time.Duration) string {
	lookups := float64(n) / 30
	provides := float64(n)/(6*time.Hour).Seconds() + float64(n)/session.Seconds()
	return fmt.Sprintf("| %d | every agent, every 30 s | %s | %s | %d | %s | %s | %s | all |",
		n, rate(lookups), rate(provides), n, answer(n), rate(lookups+provides), held(n, lookups+provides))
}

// currentRow is the rule agents follow, as simulated.
func currentRow(n int, r result) string {
	joined := "-"
	if r.joins > 0 {
		joined = fmt.Sprintf("%.1f%% of %d", 100*float64(r.joined)/float64(r.joins), r.joins)
	}
	return fmt.Sprintf("| %d | while it helps, ~32 providers | %s (%s) | %s | %.0f (max %d, %.0f up) | %s | %s | %s | %s |",
		n, rate(r.lookups), rate(r.heals), rate(r.provides), r.records, r.maxRecords, r.useful, answer(r.maxRecords),
		rate(r.lookups+r.provides), held(n, r.lookups+r.provides), joined)
}

// held is how many inbound connections from the network a server close to
// the key holds: one per request for graceHold, at most one per agent.
func held(n int, perSecond float64) string {
	return strconv.Itoa(min(n, int(perSecond*graceHold.Seconds()+0.5)))
}

func answer(records int) string {
	b := answerBytes(records)
	s := bytesString(b)
	if b > network.MessageSizeMax {
		s += " (over the 4 MiB message limit)"
	}
	return s
}

func bytesString(b int) string {
	switch {
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%d B", b)
}

func rate(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 1:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.3f", v)
}

func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 2 || n > 1_000_000 {
			return nil, fmt.Errorf("size %q: want a number of agents from 2 to 1000000", f)
		}
		out = append(out, n)
	}
	return out, nil
}
