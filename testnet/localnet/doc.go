// Package localnet runs a network of agent processes on this machine: each
// agent a child process of the zorilla binary on 127.0.0.1, with its own
// data dir and log under one temporary folder, on a Zorilla network of its
// own so it never joins the user's agents. `zorilla demo`, `zorilla bench`
// and the end-to-end tests of the command start their agents with it.
//
//	net, err := localnet.New("demo", os.Stderr, "")
//	defer net.Close(false)
//	err = net.Up(ctx, 8, 2) // 8 agents, 2 slots each, linked
//	cl := net.Agents()[0].Client
//
// Up returns once every agent answers on its socket and a flood from any
// agent reaches every other one. Close stops the agents (SIGTERM, then
// SIGKILL after a grace) and removes the folder. Each agent runs in its own
// process group and, on Linux, gets SIGTERM if the parent dies, so neither
// a terminal's Ctrl-C nor a killed parent leaves agents behind.
//
// Program builds one of the module's examples with the Go toolchain, for
// commands that run an example when the user gives no program.
package localnet
