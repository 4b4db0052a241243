// Command zorilla is the one binary of Zorilla: the agent and every client
// command (submit, status, jobs, cancel, peers, id, demo, testnet, bench).
package main

import (
	"os"
)

func main() {
	os.Exit(run(os.Args, os.Stdout, os.Stderr))
}
