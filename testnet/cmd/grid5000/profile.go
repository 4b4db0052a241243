package main

import (
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
	"runtime/trace"
)

// startProfiles starts a CPU profile and an execution trace into the files
// named (either may be empty: not taken) and returns what stops them and
// closes the files.
func startProfiles(cpuprofile, tracefile string) (stop func() error, err error) {
	var stops []func() error
	stop = func() error {
		var errs []error
		for i := len(stops) - 1; i >= 0; i-- {
			errs = append(errs, stops[i]())
		}
		return errors.Join(errs...)
	}
	start := func(name string, begin func(*os.File) error, end func()) error {
		if name == "" {
			return nil
		}
		f, err := os.Create(name)
		if err != nil {
			return err
		}
		if err := begin(f); err != nil {
			return errors.Join(err, f.Close())
		}
		stops = append(stops, func() error { end(); return f.Close() })
		return nil
	}
	if err := start(cpuprofile, func(f *os.File) error { return pprof.StartCPUProfile(f) }, pprof.StopCPUProfile); err != nil {
		return nil, fmt.Errorf("-cpuprofile: %w", err)
	}
	if err := start(tracefile, func(f *os.File) error { return trace.Start(f) }, trace.Stop); err != nil {
		return nil, errors.Join(fmt.Errorf("-trace: %w", err), stop())
	}
	return stop, nil
}
