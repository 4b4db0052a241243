//go:build !linux

package docker

import (
	"context"
	"errors"
)

// RunDelayer needs Linux: network namespaces and NFQUEUE.
func RunDelayer(context.Context, string) error {
	return errors.New("docker: the delayer runs only on Linux")
}
