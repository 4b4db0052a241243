package lifecycle

import (
	"testing"
)

func TestShouldYield(t *testing.T) {
	for _, c := range []struct {
		feasible, want bool
	}{{false, true}, {true, false}} {
		if got := ShouldYield(c.feasible); got != c.want {
			t.Errorf("ShouldYield(feasible=%v) = %v, want %v", c.feasible, got, c.want)
		}
	}
}
