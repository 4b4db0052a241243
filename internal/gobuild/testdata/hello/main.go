// Command hello prints a greeting: the program gobuild's test builds.
package main

import "fmt"

func main() { fmt.Println("hello from a built program") }
