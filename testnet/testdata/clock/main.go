// Command clock is the rank of the gang tests: it prints the wall clock
// ("t NS", nanoseconds since the epoch) about every 10 ms, as many times
// as its argument says. The readings show which time slices each rank ran
// in; a shell loop forking date and sleep would cost the loaded test
// machine a core of its own.
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

func main() {
	n, err := strconv.Atoi(os.Args[len(os.Args)-1])
	if len(os.Args) != 2 || err != nil || n < 1 {
		fmt.Fprintln(os.Stderr, "usage: clock N")
		os.Exit(2)
	}
	for range n {
		fmt.Printf("t %d\n", time.Now().UnixNano())
		time.Sleep(10 * time.Millisecond)
	}
}
