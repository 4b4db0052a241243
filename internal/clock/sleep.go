package clock

import (
	"context"
	"time"
)

// Sleep waits d, or less when ctx ends first: then it returns ctx's error.
// It is the one wait for retries and backoffs that must end on shutdown.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
