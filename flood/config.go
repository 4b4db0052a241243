package flood

import (
	"fmt"
	"strings"
	"time"
)

// HardMaxTTL bounds Config.MaxTTL: no configuration may let an advert travel
// further than this many hops.
const HardMaxTTL = 64

// Config tunes a Flooder. Start from DefaultConfig and change what you need.
type Config struct {
	// Network scopes the advert protocol (Protocol): agents of other
	// networks neither send adverts here nor get them from here.
	Network string
	// MaxTTL is the largest radius this peer floods with and the largest
	// remaining TTL it accepts; adverts with more are dropped, not clipped.
	MaxTTL int
	// MaxAdvertSize bounds one message on the wire (TTL, signed envelope and
	// all); a frame announcing more is refused before its body is read.
	MaxAdvertSize int
	// SeenSize bounds the number of jobs remembered for de-duplication
	// (least recently used first out).
	SeenSize int
	// SeenTTL is how long a job is remembered after its last advert. It must
	// be at least MaxLifetime, so an advert always expires before the memory
	// of it does and cannot be forwarded twice with the same TTL.
	SeenTTL time.Duration
	// AdvertLifetime is the expiry Flood signs into an advert that has none.
	AdvertLifetime time.Duration
	// MaxLifetime is the farthest in the future an accepted advert may
	// expire; it also bounds the clock skew tolerated between peers.
	MaxLifetime time.Duration
	// Rate is the sustained number of adverts per second accepted from one
	// peer, and Burst how many it may send at once (a token bucket).
	Rate  float64
	Burst int
	// StreamTimeout bounds opening, writing and reading one advert stream.
	StreamTimeout time.Duration
	// SendQueue bounds adverts waiting to be sent; when full, sends are
	// dropped and counted. Senders is how many streams are written at once.
	SendQueue int
	Senders   int
	// DeliverQueue bounds adverts waiting for the local DeliverFunc; when
	// full, adverts are dropped and counted.
	DeliverQueue int
	// Clock is the time source; nil means the system clock. Tests inject one
	// to control expiry, rate limits and the Advertise schedule.
	Clock Clock
}

// DefaultConfig returns the configuration for a real agent.
func DefaultConfig() Config {
	return Config{
		Network: DefaultNetwork,
		// 10 hops: with a handful of neighbours per peer the ball of radius
		// 10 holds far more peers than any job needs, and with Zorilla's
		// doubling waits (1 s, 2 s, ...) radius 10 comes after 8.5 minutes,
		// longer than a sensible scheduling deadline.
		MaxTTL: 10,
		// 16 KiB: a job.Need is at most 4 KiB; base64 in the record and again
		// in the message, plus 16 addresses, the key and the signature, stay
		// well under it. A peer can never make us read more per stream.
		MaxAdvertSize: 16 << 10,
		// 4096 jobs: an entry is about a hundred bytes, so under 1 MiB; a job
		// evicted early is at worst forwarded once more.
		SeenSize: 4096,
		// 15 minutes: at least MaxLifetime (see the field's comment).
		SeenTTL: 15 * time.Minute,
		// 5 minutes: workers answer an advert within seconds; the
		// submitter re-signs on every radius, so only skew needs the slack.
		AdvertLifetime: 5 * time.Minute,
		// 10 minutes: AdvertLifetime plus 5 minutes of clock skew.
		MaxLifetime: 10 * time.Minute,
		// 20/s, burst 50: a neighbour passes each job on at most MaxTTL
		// times, so this carries dozens of concurrent job floods while
		// capping what a misbehaving peer costs in signature checks.
		Rate:  20,
		Burst: 50,
		// 10 s: enough to dial and write 16 KiB over a slow WAN link; a
		// stuck peer holds one sender or one handler for at most this.
		StreamTimeout: 10 * time.Second,
		// 1024 sends, 8 at once: one forward goes to every neighbour, so this
		// absorbs bursts of many jobs while a few slow peers cannot stall it.
		SendQueue: 1024,
		Senders:   8,
		// 256: the worker decides quickly; a longer queue only delays
		// adverts that are stale by the time they are read.
		DeliverQueue: 256,
	}
}

// validate reports the first setting that is out of range.
func (c Config) validate() error {
	switch {
	case c.Network == "" || strings.ContainsAny(c.Network, "/ "):
		return fmt.Errorf("flood: network name %q is empty or has '/' or a space", c.Network)
	case c.MaxTTL < 1 || c.MaxTTL > HardMaxTTL:
		return fmt.Errorf("flood: MaxTTL %d outside 1..%d", c.MaxTTL, HardMaxTTL)
	case c.MaxAdvertSize < 1<<10 || c.MaxAdvertSize > 1<<20:
		return fmt.Errorf("flood: MaxAdvertSize %d outside 1 KiB..1 MiB", c.MaxAdvertSize)
	case c.SeenSize < 1:
		return fmt.Errorf("flood: SeenSize %d must be positive", c.SeenSize)
	case c.AdvertLifetime <= 0 || c.AdvertLifetime > c.MaxLifetime:
		return fmt.Errorf("flood: AdvertLifetime %v must be in (0, MaxLifetime %v]", c.AdvertLifetime, c.MaxLifetime)
	case c.SeenTTL < c.MaxLifetime:
		return fmt.Errorf("flood: SeenTTL %v must be at least MaxLifetime %v", c.SeenTTL, c.MaxLifetime)
	case c.Rate <= 0 || c.Burst < 1:
		return fmt.Errorf("flood: Rate %v and Burst %d must be positive", c.Rate, c.Burst)
	case c.StreamTimeout <= 0:
		return fmt.Errorf("flood: StreamTimeout %v must be positive", c.StreamTimeout)
	case c.SendQueue < 1 || c.Senders < 1 || c.DeliverQueue < 1:
		return fmt.Errorf("flood: SendQueue %d, Senders %d and DeliverQueue %d must be positive",
			c.SendQueue, c.Senders, c.DeliverQueue)
	}
	return nil
}

// Clock is the time source of a Flooder.
type Clock interface {
	Now() time.Time
	// After fires once, d from now, as time.After does.
	After(d time.Duration) <-chan time.Time
}

type systemClock struct{}

func (systemClock) Now() time.Time                         { return time.Now() }
func (systemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
