package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
)

// profiles names the files the jobs are profiled into; an empty name is
// not taken.
type profiles struct {
	cpu, mem, trace string
}

// start starts the CPU profile and the trace, writes the heap profile's
// start, and returns what stops them, writes the heap's end and closes
// the files.
func (p profiles) start() (stop func() error, err error) {
	var stops []func() error
	stop = func() error {
		var errs []error
		for i := len(stops) - 1; i >= 0; i-- {
			errs = append(errs, stops[i]())
		}
		return errors.Join(errs...)
	}
	if err := startFile(p.cpu, &stops, func(f *os.File) error { return pprof.StartCPUProfile(f) }, pprof.StopCPUProfile); err != nil {
		return nil, fmt.Errorf("-cpuprofile: %w", err)
	}
	if err := startFile(p.trace, &stops, func(f *os.File) error { return trace.Start(f) }, trace.Stop); err != nil {
		return nil, errors.Join(fmt.Errorf("-trace: %w", err), stop())
	}
	if p.mem != "" {
		if err := writeHeap(p.mem + ".start"); err != nil {
			return nil, errors.Join(fmt.Errorf("-memprofile: %w", err), stop())
		}
		stops = append(stops, func() error { return writeHeap(p.mem) })
	}
	return stop, nil
}

// startFile creates name and begins writing into it (unless name is
// empty), and adds to stops what ends it and closes the file.
func startFile(name string, stops *[]func() error, begin func(*os.File) error, end func()) error {
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
	*stops = append(*stops, func() error { end(); return f.Close() })
	return nil
}

// writeHeap writes the heap profile, as of the last collection, to name.
func writeHeap(name string) error {
	runtime.GC() // the live heap as of now, not the last cycle's
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	return errors.Join(pprof.Lookup("heap").WriteTo(f, 0), f.Close())
}
