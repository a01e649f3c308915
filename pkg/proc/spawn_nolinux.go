//go:build !linux

package proc

import (
	"os/exec"
	"syscall"
)

// startCmd starts cmd.
func startCmd(cmd *exec.Cmd) error { return cmd.Start() }

// Subreap does nothing here: only Linux lets a process adopt the
// descendants that leave its children's process groups.
func Subreap() {}

// EndStrays does nothing here (see Subreap).
func EndStrays() {}

// procID names a process (only Linux's /proc finds any: see leftGroup).
type procID struct{ pid int }

// leftGroup finds nothing here: it reads Linux's /proc.
func leftGroup(int) []procID { return nil }

// unadopted finds nothing here (see leftGroup).
func unadopted(int) []procID { return nil }

func signalLeft([]procID, syscall.Signal) {}
