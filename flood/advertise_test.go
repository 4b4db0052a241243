package flood

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// fakeLoop drives loop.run with a recorded flood and an After that fires at
// once, recording the waits asked for.
type fakeLoop struct {
	radii []int
	waits []time.Duration
	onR   map[int]func() // called during the flood of that radius
	err   error          // returned by every flood when set
}

func (fl *fakeLoop) loop(done <-chan struct{}) loop {
	return loop{
		flood: func(_ context.Context, r int) error {
			fl.radii = append(fl.radii, r)
			if fn := fl.onR[r]; fn != nil {
				fn()
			}
			return fl.err
		},
		after: func(d time.Duration) <-chan time.Time {
			fl.waits = append(fl.waits, d)
			ch := make(chan time.Time, 1)
			ch <- time.Time{}
			return ch
		},
		done: done,
	}
}

func TestLoopSchedule(t *testing.T) {
	const ms = time.Millisecond
	zorilla := Schedule{First: time.Second, Factor: 2}
	for _, tc := range []struct {
		name      string
		sched     Schedule
		maxRadius int
		enoughAt  int // close enough during this radius's flood; 0: never
		cancelAt  int // cancel ctx during this radius's flood; 0: never
		radii     []int
		waits     []time.Duration
		err       error
	}{
		{"Zorilla, enough at radius 3", zorilla, 10, 3, 0, []int{1, 2, 3},
			[]time.Duration{time.Second, 2 * time.Second, 4 * time.Second}, nil},
		{"never enough: stops at the max radius", Schedule{First: ms, Factor: 2}, 4, 0, 0, []int{1, 2, 3, 4},
			[]time.Duration{ms, 2 * ms, 4 * ms, 8 * ms}, ErrMaxRadius},
		{"factor 1.5", Schedule{First: 10 * ms, Factor: 1.5}, 3, 0, 0, []int{1, 2, 3},
			[]time.Duration{10 * ms, 15 * ms, 22500 * time.Microsecond}, ErrMaxRadius},
		{"deadline during radius 2", zorilla, 10, 0, 2, []int{1, 2},
			[]time.Duration{time.Second, 2 * time.Second}, context.Canceled},
		{"enough at radius 1", zorilla, 10, 1, 0, []int{1}, []time.Duration{time.Second}, nil},
		{"enough at radius 2, one extra radius at once", Schedule{First: time.Second, Factor: 2, Extra: 1}, 10, 2, 0,
			[]int{1, 2, 3}, []time.Duration{time.Second, 2 * time.Second}, nil},
		{"two extra radii, cut at the max radius", Schedule{First: time.Second, Factor: 2, Extra: 2}, 3, 2, 0,
			[]int{1, 2, 3}, []time.Duration{time.Second, 2 * time.Second}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			enough := make(chan int, 1)
			fl := &fakeLoop{onR: map[int]func(){tc.enoughAt: func() { enough <- tc.sched.Extra }, tc.cancelAt: cancel}}
			err := fl.loop(nil).run(ctx, Steer{Enough: enough}, tc.sched, tc.maxRadius)
			if !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			if fmt.Sprint(fl.radii) != fmt.Sprint(tc.radii) || fmt.Sprint(fl.waits) != fmt.Sprint(tc.waits) {
				t.Fatalf("radii %v waits %v, want %v %v", fl.radii, fl.waits, tc.radii, tc.waits)
			}
		})
	}
}

func TestLoopStopsEarly(t *testing.T) {
	sched := Schedule{First: time.Millisecond, Factor: 2}
	enough := make(chan int, 1)
	enough <- 1
	fl := &fakeLoop{}
	if err := fl.loop(nil).run(context.Background(), Steer{Enough: enough}, sched, 5); err != nil || len(fl.radii) != 0 {
		t.Fatalf("already enough: err %v, floods %v", err, fl.radii)
	}
	done := make(chan struct{})
	close(done)
	fl = &fakeLoop{}
	lp := fl.loop(done)
	lp.after = func(time.Duration) <-chan time.Time { return nil }
	if err := lp.run(context.Background(), Steer{}, sched, 5); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed flooder: err %v", err)
	}
	boom := errors.New("boom")
	fl = &fakeLoop{err: boom}
	if err := fl.loop(nil).run(context.Background(), Steer{}, sched, 5); !errors.Is(err, boom) || len(fl.waits) != 0 {
		t.Fatalf("flood error: err %v, waits %v", err, fl.waits)
	}
}

func TestScheduleValidate(t *testing.T) {
	for _, s := range []Schedule{{}, {First: -1, Factor: 2}, {First: 1, Factor: 0.5}, {First: 1, Factor: 2, MaxRadius: -1}, {First: 1, Factor: 2, Extra: -1}} {
		if err := s.validate(); err == nil {
			t.Errorf("%+v accepted", s)
		}
	}
	if err := ZorillaSchedule().validate(); err != nil {
		t.Fatal(err)
	}
	if got := (Schedule{First: time.Hour, Factor: 1e300}).next(time.Hour); got <= 0 {
		t.Fatalf("wait overflowed to %v", got)
	}
}

// The real loop on a line, with the submitter's clock in the test's hands:
// each wait is released only once the current radius has reached every
// peer it should. Peer 3 signals enough; the loop must stop at radius 3
// with waits t, 2t, 4t and never flood radius 4.
func TestAdvertiseOnLine(t *testing.T) {
	fc := newFakeClock(time.Now())
	adj := line(6)
	c := newCluster(t, adj, func(i int, cfg *Config) {
		if i == 0 {
			cfg.Clock = fc
		}
	})
	enough := make(chan struct{})
	var once sync.Once
	c.rec[3].hook = func(Advert) { once.Do(func() { close(enough) }) }

	const first = 5 * time.Millisecond
	res := make(chan error, 1)
	go func() {
		res <- c.fl[0].Advertise(context.Background(), Advert{Job: "adv"}, enough, Schedule{First: first, Factor: 2})
	}()
	for r := 1; r <= 3; r++ {
		w := fc.nextWait(t)
		if want := first << (r - 1); w.d != want {
			t.Fatalf("wait after radius %d: %v, want %v", r, w.d, want)
		}
		for i := 1; i <= r; i++ {
			waitFor(t, fmt.Sprintf("radius %d at peer %d", r, i), func() bool {
				return lastTTL(c.rec[i].deliveries(), "adv") == r-i+1
			})
		}
		if r < 3 {
			w.fire <- time.Now()
		}
	}
	select {
	case err := <-res:
		if err != nil {
			t.Fatalf("Advertise: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Advertise did not stop on enough")
	}
	if st := c.fl[0].Stats(); st.Originated != 3 {
		t.Fatalf("originated %d floods, want 3", st.Originated)
	}
	if c.fl[3].Stats().Forwarded != 0 || len(c.rec[4].deliveries()) != 0 {
		t.Fatal("the flood went past radius 3")
	}
}

func TestAdvertiseRefusesBadSchedule(t *testing.T) {
	c := newCluster(t, [][]int{{}}, nil)
	if err := c.fl[0].Advertise(context.Background(), Advert{Job: "j"}, nil, Schedule{}); err == nil {
		t.Fatal("zero schedule accepted")
	}
	if st := c.fl[0].Stats(); st.Originated != 0 {
		t.Fatalf("flooded with a bad schedule: %+v", st)
	}
}

// The collector steers the loop: an answered radius moves it on at once
// (a stale radius does not), and the extra radii flooded at enough are
// those it asks for, never more than the schedule's.
func TestLoopSteered(t *testing.T) {
	sched := Schedule{First: time.Second, Factor: 2, Extra: 1}
	for _, tc := range []struct {
		name     string
		answered map[int]int // during the flood of radius k, radius v is answered
		enoughAt int
		extra    int
		radii    []int
		err      error
	}{
		{"answered radii move on", map[int]int{1: 1, 2: 2}, 3, 1, []int{1, 2, 3, 4}, nil},
		{"no extra radius worth it", map[int]int{1: 1}, 2, 0, []int{1, 2}, nil},
		{"more extra asked than the schedule's", nil, 1, 5, []int{1, 2}, nil},
		{"a stale radius is ignored", map[int]int{2: 1}, 0, 0, []int{1, 2, 3, 4}, ErrMaxRadius},
	} {
		t.Run(tc.name, func(t *testing.T) {
			enough, answered := make(chan int, 1), make(chan int, 1)
			flooded := make(chan int, 16)
			fl := &fakeLoop{onR: map[int]func(){}}
			for k, v := range tc.answered {
				fl.onR[k] = func() { answered <- v }
			}
			if tc.enoughAt > 0 {
				prev := fl.onR[tc.enoughAt]
				fl.onR[tc.enoughAt] = func() {
					if prev != nil {
						prev()
					}
					enough <- tc.extra
				}
			}
			lp := fl.loop(nil)
			// The wait of a radius answered never ends: only the answer
			// moves the loop on. Any other wait ends at once.
			lp.after = func(time.Duration) <-chan time.Time {
				ch := make(chan time.Time, 1)
				if r := fl.radii[len(fl.radii)-1]; tc.answered[r] != r {
					ch <- time.Time{}
				}
				return ch
			}
			err := lp.run(context.Background(), Steer{Enough: enough, Answered: answered, Flooded: flooded}, sched, 4)
			if tc.err == nil && err != nil || tc.err != nil && !errors.Is(err, tc.err) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			if fmt.Sprint(fl.radii) != fmt.Sprint(tc.radii) {
				t.Fatalf("radii %v, want %v", fl.radii, tc.radii)
			}
			close(flooded)
			var told []int
			for r := range flooded {
				told = append(told, r)
			}
			if fmt.Sprint(told) != fmt.Sprint(fl.radii) {
				t.Fatalf("collector told %v, flooded %v", told, fl.radii)
			}
		})
	}
}

// TestLoopHold steps the loop by hand: while the collector holds it, the
// end of a schedule's wait floods nothing; the release floods the next
// radius at once if a wait ended meanwhile, and an answered radius moves
// the loop on whatever the hold.
func TestLoopHold(t *testing.T) {
	flooded := make(chan int)
	timers := make(chan chan time.Time, 1)
	lp := loop{
		flood: func(_ context.Context, r int) error { flooded <- r; return nil },
		after: func(time.Duration) <-chan time.Time {
			ch := make(chan time.Time, 1)
			timers <- ch
			return ch
		},
	}
	hold, answered, enough := make(chan bool), make(chan int), make(chan int)
	done := make(chan error, 1)
	go func() {
		done <- lp.run(context.Background(), Steer{Enough: enough, Answered: answered, Hold: hold}, Schedule{First: time.Second, Factor: 2, Extra: 0}, 6)
	}()
	expect := func(r int) chan time.Time {
		t.Helper()
		if got := <-flooded; got != r {
			t.Fatalf("flooded radius %d, want %d", got, r)
		}
		return <-timers
	}
	nothing := func(what string) {
		t.Helper()
		// The loop takes its next channel operation only after handling
		// the last one: a send it takes means it is waiting again, not
		// flooding.
		select {
		case r := <-flooded:
			t.Fatalf("%s: radius %d flooded", what, r)
		case hold <- true:
		}
	}

	timer := expect(1)
	timer <- time.Time{} // not held: the wait's end floods radius 2
	timer = expect(2)
	hold <- true
	timer <- time.Time{}
	nothing("a wait ended while held")
	hold <- false // released with the wait over: radius 3 at once
	timer = expect(3)
	hold <- true
	answered <- 3 // held, but answered: radius 4
	timer = expect(4)
	nothing("held across radii")
	timer <- time.Time{}
	nothing("the wait of radius 4 ended while held")
	enough <- 0
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
}
