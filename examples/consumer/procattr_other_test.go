//go:build !linux

package main

import "syscall"

// runAttr starts a process the tests run in a process group of its own.
func runAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
