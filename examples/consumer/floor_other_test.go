//go:build !linux

package main

import (
	"fmt"
	"os"
)

// floorSend: the floor's raw system calls are Linux's.
func floorSend([]string) int {
	fmt.Fprintln(os.Stderr, "floorsender: runs on Linux only")
	return 2
}
