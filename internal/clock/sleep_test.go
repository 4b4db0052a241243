package clock

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A sleep ends with its duration, or at once with the context's error
// when the context ends first.
func TestSleep(t *testing.T) {
	if err := Sleep(context.Background(), time.Millisecond); err != nil {
		t.Fatalf("a sleep that ran its course: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("a sleep whose context ended: %v, want context.Canceled", err)
	}
}
