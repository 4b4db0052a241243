package submitter

import (
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/internal/gang"
)

func TestSwapValidateAndResumeAt(t *testing.T) {
	ok := Swap{Rotation: gang.Config{Slice: 10 * time.Second, Columns: 2}, Set: 1, Gap: time.Second,
		StopTimeout: time.Second, Poll: time.Millisecond}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []func(*Swap){
		func(w *Swap) { w.Set = 2 },
		func(w *Swap) { w.Set = -1 },
		func(w *Swap) { w.Gap = 10 * time.Second },
		func(w *Swap) { w.Gap = -1 },
		func(w *Swap) { w.StopTimeout = 0 },
		func(w *Swap) { w.Poll = 0 },
		func(w *Swap) { w.Rotation.Columns = 0 },
	} {
		w := ok
		bad(&w)
		if w.Validate() == nil {
			t.Errorf("Validate(%+v) = nil, want an error", w)
		}
	}
	now := time.Unix(25, 0) // slot 2 of 10 s slices: begins at 20 s
	if got := swapResumeAt(ok, now); !got.Equal(time.Unix(21, 0)) {
		t.Errorf("sequential resume at %v, want 21s", got.Unix())
	}
	ov := ok
	ov.Policy = gang.Overlapped
	if got := swapResumeAt(ov, now); !got.Equal(time.Unix(20, 0)) {
		t.Errorf("overlapped resume at %v, want 20s", got.Unix())
	}
}
