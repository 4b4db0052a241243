package main

import "syscall"

// demoProcAttr puts each demo agent in its own process group, so that
// Ctrl-C in the terminal reaches only the demo, which cancels the job and
// stops the agents in order; and asks the kernel to send it SIGTERM if the
// demo dies without stopping it (kill -9), so no agent is left behind.
func demoProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
