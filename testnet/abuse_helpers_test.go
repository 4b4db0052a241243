package testnet

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/zorilla-p2p/zorilla/internal/wire"
)

// Helpers of the abuse test: an open-loop load generator on a raw libp2p
// host, and a memory sampler.

// abuseSeconds is how long each kind of flood lasts: 3 s in CI,
// ZORILLA_ABUSE_SECONDS for the full run (30 for BENCHMARKS.md).
func abuseSeconds(t *testing.T) time.Duration {
	s := os.Getenv("ZORILLA_ABUSE_SECONDS")
	if s == "" {
		return 3 * time.Second
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 600 {
		t.Fatalf("ZORILLA_ABUSE_SECONDS=%q: want whole seconds, 1..600", s)
	}
	return time.Duration(n) * time.Second
}

// floodLoad is what one flood did, as its sender saw it.
type floodLoad struct {
	attempts atomic.Uint64 // streams the generator tried to open
	served   atomic.Uint64 // requests answered by the agent (kinds with a reply)
	refused  atomic.Uint64 // streams reset, refused or failed
	missed   atomic.Uint64 // ticks the senders were all busy for: the rate not reached
	start    time.Time
	end      time.Time
}

func (l *floodLoad) rate() float64 {
	return float64(l.attempts.Load()) / l.end.Sub(l.start).Seconds()
}

// flooder sends requests of one protocol to one peer at a target rate
// from senders goroutines, until stop is closed. payload(i) is the i-th
// request; reply, when set, reads the agent's answer (one JSON value).
type flooder struct {
	raw     *attackerHost
	to      peer.ID
	proto   protocol.ID
	rate    float64
	senders int
	payload func(i uint64) []byte
	reply   bool
}

// run floods until stop is closed and returns the load. Tokens are issued
// every 10 ms for the time passed (open loop: a slow agent does not slow
// the attack down); tokens no sender is free to take are counted as
// missed.
func (f *flooder) run(stop <-chan struct{}) *floodLoad {
	load := &floodLoad{start: time.Now()}
	tokens := make(chan uint64, f.senders)
	var wg sync.WaitGroup
	for range f.senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range tokens {
				f.send(load, i)
			}
		}()
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var issued uint64
	for done := false; !done; {
		select {
		case <-stop:
			done = true
		case now := <-tick.C:
			for want := uint64(now.Sub(load.start).Seconds() * f.rate); issued < want; issued++ {
				select {
				case tokens <- issued:
				default:
					load.missed.Add(1)
				}
			}
		}
	}
	close(tokens)
	wg.Wait()
	load.end = time.Now()
	return load
}

// send opens one stream, writes request i and, for kinds with a reply,
// reads it.
func (f *flooder) send(load *floodLoad, i uint64) {
	load.attempts.Add(1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := f.raw.h.NewStream(ctx, f.to, f.proto)
	if err != nil {
		load.refused.Add(1)
		return
	}
	_ = s.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := s.Write(f.payload(i)); err != nil {
		load.refused.Add(1)
		_ = s.Reset()
		return
	}
	if !f.reply {
		_ = s.Close()
		return
	}
	_ = s.CloseWrite()
	var v map[string]any
	if err := wire.ReadJSON(bufio.NewReader(s), 4<<10, &v); err != nil {
		load.refused.Add(1)
		_ = s.Reset()
		return
	}
	load.served.Add(1)
	_ = s.Close()
}

// memSample is the process's memory at one time.
type memSample struct {
	heap uint64 // bytes of heap in use (runtime.MemStats.HeapInuse)
	rss  uint64 // resident set (VmRSS), 0 where /proc is missing
}

func (m memSample) String() string {
	return fmt.Sprintf("heap %.1f MiB, RSS %.1f MiB", float64(m.heap)/(1<<20), float64(m.rss)/(1<<20))
}

// memNow reads the heap in use and the resident set; with gc it collects
// first, for a figure of what is really held.
func memNow(gc bool) memSample {
	if gc {
		runtime.GC()
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return memSample{heap: ms.HeapInuse, rss: vmRSS()}
}

func vmRSS() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseUint(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// sampleMem records the largest heap and RSS seen every 100 ms until stop
// is closed.
func sampleMem(stop <-chan struct{}) <-chan memSample {
	out := make(chan memSample, 1)
	go func() {
		var peak memSample
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			m := memNow(false)
			peak.heap, peak.rss = max(peak.heap, m.heap), max(peak.rss, m.rss)
			select {
			case <-stop:
				out <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return out
}

// errNotScheduled is returned when a job never reached running.
var errNotScheduled = errors.New("job never reached running")
