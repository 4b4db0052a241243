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

// Steer is how the collector of offers steers Advertise's loop while it
// runs. A nil channel never fires.
type Steer struct {
	// Enough receives once, when the offers are enough, how many of the
	// schedule's Extra radii are worth flooding (0: none can change the
	// placement); the loop floods them at once and returns.
	Enough <-chan int
	// Answered receives a radius whose answers are all in while the offers
	// are not enough: the loop floods the next radius at once instead of
	// at the end of the wait. A radius other than the last one flooded is
	// stale and ignored.
	Answered <-chan int
	// Flooded, if set, is sent every radius as it is flooded (the extra
	// ones too), so that the collector knows which radius it is answering.
	// The loop waits for the collector to take it.
	Flooded chan<- int
	// Hold, while the last value it sent is true, keeps the schedule's
	// waits from flooding the next radius: the collector steers the loop
	// on its own (Answered, Enough), as it does once the job is feasible
	// and a wider radius would only reach the agents still answering
	// again. A wait that ended while held moves the loop on as soon as
	// the hold is released (false).
	Hold <-chan bool
}

// Advertise runs the submitter's loop for a (Zorilla's thread 1): flood
// with radius 1, wait; radius 2, wait longer; ... It returns nil as soon as
// enough is closed (the caller collects offers beside it and closes enough
// when it has them) and the schedule's Extra radii are flooded, ctx's error
// when ctx ends (the job's scheduling deadline), ErrMaxRadius after the
// wait of the largest radius, and ErrClosed when the Flooder closes. A nil
// enough never fires. Steered is the same loop, steered by what the offers
// show.
func (f *Flooder) Advertise(ctx context.Context, a Advert, enough <-chan struct{}, sched Schedule) error {
	got := make(chan int, 1)
	stop := make(chan struct{})
	defer close(stop)
	select {
	case <-enough: // already enough (a nil enough is never ready)
		got <- sched.Extra
	default:
		go func() {
			select {
			case <-enough:
				got <- sched.Extra
			case <-stop:
			}
		}()
	}
	return f.Steered(ctx, a, Steer{Enough: got}, sched)
}

// Steered runs the growing-radius loop for a as Advertise does, and lets
// the collector of offers move it on: to the next radius as soon as the
// last one has answered (st.Answered), and to only the extra radii that
// can still change the placement once the offers are enough (st.Enough).
func (f *Flooder) Steered(ctx context.Context, a Advert, st Steer, sched Schedule) error {
	if err := sched.validate(); err != nil {
		return err
	}
	maxRadius := f.cfg.MaxTTL
	if sched.MaxRadius > 0 && sched.MaxRadius < maxRadius {
		maxRadius = sched.MaxRadius
	}
	lp := loop{
		flood: func(ctx context.Context, r int) error { return f.Flood(ctx, a, r) },
		after: f.cfg.Clock.After,
		done:  f.ctx.Done(),
	}
	return lp.run(ctx, st, sched, maxRadius)
}

// loop is the I/O the growing-radius loop needs, so that tests can drive it
// with a fake flood and clock.
type loop struct {
	flood func(ctx context.Context, radius int) error
	after func(time.Duration) <-chan time.Time
	done  <-chan struct{} // the Flooder's end
}

func (lp loop) run(ctx context.Context, st Steer, sched Schedule, maxRadius int) error {
	wait := sched.First
	held := false
	for radius := 1; ; radius++ {
		select {
		case extra := <-st.Enough:
			return lp.extra(ctx, st, radius-1, min(extra, sched.Extra), maxRadius)
		default:
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := lp.floodOne(ctx, st, radius); err != nil {
			return err
		}
		timer, due := lp.after(wait), false
	waiting:
		for {
			select {
			case extra := <-st.Enough:
				return lp.extra(ctx, st, radius, min(extra, sched.Extra), maxRadius)
			case r := <-st.Answered:
				if r == radius {
					break waiting
				}
			case held = <-st.Hold:
				if !held && due {
					break waiting
				}
			case <-ctx.Done():
				return ctx.Err()
			case <-lp.done:
				return ErrClosed
			case <-timer:
				if !held {
					break waiting
				}
				due, timer = true, nil
			}
		}
		if radius >= maxRadius {
			return fmt.Errorf("%w (radius %d)", ErrMaxRadius, radius)
		}
		wait = sched.next(wait)
	}
}

// floodOne floods radius r and tells the collector.
func (lp loop) floodOne(ctx context.Context, st Steer, r int) error {
	if err := lp.flood(ctx, r); err != nil {
		return err
	}
	if st.Flooded == nil {
		return nil
	}
	select {
	case st.Flooded <- r:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-lp.done:
		return ErrClosed
	}
}

// extra floods the radii after last, up to n of them and maxRadius.
func (lp loop) extra(ctx context.Context, st Steer, last, n, maxRadius int) error {
	for r := last + 1; r <= min(last+n, maxRadius); r++ {
		if err := lp.floodOne(ctx, st, r); err != nil {
			return err
		}
	}
	return nil
}
