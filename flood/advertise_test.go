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
			enough := make(chan struct{})
			fl := &fakeLoop{onR: map[int]func(){tc.enoughAt: func() { close(enough) }, tc.cancelAt: cancel}}
			err := fl.loop(nil).run(ctx, enough, NewGrowth(tc.sched, tc.sched.Limit(tc.maxRadius)))
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
	enough := make(chan struct{})
	close(enough)
	fl := &fakeLoop{}
	if err := fl.loop(nil).run(context.Background(), enough, NewGrowth(sched, 5)); err != nil || len(fl.radii) != 0 {
		t.Fatalf("already enough: err %v, floods %v", err, fl.radii)
	}
	done := make(chan struct{})
	close(done)
	fl = &fakeLoop{}
	lp := fl.loop(done)
	lp.after = func(time.Duration) <-chan time.Time { return nil }
	if err := lp.run(context.Background(), nil, NewGrowth(sched, 5)); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed flooder: err %v", err)
	}
	boom := errors.New("boom")
	fl = &fakeLoop{err: boom}
	if err := fl.loop(nil).run(context.Background(), nil, NewGrowth(sched, 5)); !errors.Is(err, boom) || len(fl.waits) != 0 {
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
