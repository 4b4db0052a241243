//go:build !linux

package main

import "syscall"

// demoProcAttr leaves the demo agents in the demo's process group: where
// there is no parent-death signal, a terminal Ctrl-C reaching the agents
// too is what keeps them from outliving the demo.
func demoProcAttr() *syscall.SysProcAttr { return nil }
