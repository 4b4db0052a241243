package flood

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
)

// ErrMaxRadius is returned by Advertise when the largest radius has been
// flooded and waited for without enough offers.
var ErrMaxRadius = errors.New("flood: largest radius flooded without enough offers")

// Schedule is the submitter's growing-radius loop: flood radius 1 and wait
// First; flood radius 2 and wait First*Factor; and so on up to MaxRadius.
type Schedule struct {
	First     time.Duration // wait after the radius-1 flood
	Factor    float64       // each wait is the previous one times Factor (>= 1)
	MaxRadius int           // last radius; 0, or more than the Flooder's MaxTTL, means MaxTTL
	// Extra radii are flooded at once, without waiting, when enough is
	// signalled: P2P-MPI's overbooking, in space. On a locality-aware
	// overlay the next hop is mostly hosts close to those already found,
	// so the placement can prefer them over the farther hosts of the
	// radius that made the job feasible.
	Extra int
}

// ZorillaSchedule is the schedule of Zorilla's flood scheduler: waits of
// 1 s, 2 s, 4 s, ... up to the Flooder's MaxTTL.
func ZorillaSchedule() Schedule { return Schedule{First: time.Second, Factor: 2} }

func (s Schedule) validate() error {
	if s.First <= 0 || s.Factor < 1 || math.IsInf(s.Factor, 0) || s.MaxRadius < 0 || s.Extra < 0 {
		return fmt.Errorf("flood: schedule %+v: need First > 0, finite Factor >= 1, MaxRadius >= 0, Extra >= 0", s)
	}
	return nil
}

// next is the wait after w, kept within time.Duration's range.
func (s Schedule) next(w time.Duration) time.Duration {
	n := float64(w) * s.Factor
	if n >= math.MaxInt64/2 {
		return math.MaxInt64 / 2
	}
	return time.Duration(n)
}

// Advertise runs the submitter's loop for a (Zorilla's thread 1): flood
// with radius 1, wait; radius 2, wait longer; ... (Growth). It returns nil
// as soon as enough is closed (the caller collects offers beside it and
// closes enough when it has them) and the schedule's Extra radii are
// flooded, ctx's error when ctx ends (the job's scheduling deadline),
// ErrMaxRadius after the wait of the largest radius, and ErrClosed when
// the Flooder closes. A nil enough never fires.
func (f *Flooder) Advertise(ctx context.Context, a Advert, enough <-chan struct{}, sched Schedule) error {
	if err := sched.validate(); err != nil {
		return err
	}
	lp := loop{
		flood: func(ctx context.Context, r int) error { return f.Flood(ctx, a, r) },
		after: f.cfg.Clock.After,
		done:  f.ctx.Done(),
	}
	return lp.run(ctx, enough, NewGrowth(sched, sched.Limit(f.cfg.MaxTTL)))
}

// MaxTTL is the largest radius this Flooder floods with (Config.MaxTTL).
func (f *Flooder) MaxTTL() int { return f.cfg.MaxTTL }

// loop is the I/O the growing-radius loop needs, so that tests can drive it
// with a fake flood and clock.
type loop struct {
	flood func(ctx context.Context, radius int) error
	after func(time.Duration) <-chan time.Time
	done  <-chan struct{} // the Flooder's end
}

func (lp loop) run(ctx context.Context, enough <-chan struct{}, g Growth) error {
	for {
		select {
		case <-enough:
			return lp.extra(ctx, g)
		default:
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		r, more := g.Next()
		if !more {
			return fmt.Errorf("%w (radius %d)", ErrMaxRadius, g.Radius())
		}
		if err := lp.flood(ctx, r); err != nil {
			return err
		}
		g = g.Flooded(r, time.Time{}) // the loop counts waits, not instants
		select {
		case <-enough:
			return lp.extra(ctx, g)
		case <-ctx.Done():
			return ctx.Err()
		case <-lp.done:
			return ErrClosed
		case <-lp.after(g.Wait()):
		}
	}
}

// extra floods the schedule's Extra radii after the last one, as far as
// the largest radius.
func (lp loop) extra(ctx context.Context, g Growth) error {
	for range g.s.Extra {
		r, more := g.Next()
		if !more {
			return nil
		}
		if err := lp.flood(ctx, r); err != nil {
			return err
		}
		g = g.Flooded(r, time.Time{})
	}
	return nil
}
