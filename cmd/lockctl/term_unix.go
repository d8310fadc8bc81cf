//go:build unix

package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// inForeground reports whether f is a terminal whose foreground process
// group is lockctl's: lockctl runs at an interactive prompt.
func inForeground(f *os.File) bool {
	if !isTerminal(f) {
		return false
	}
	fg, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCGPGRP)
	if err != nil {
		return false
	}
	own, err := unix.Getpgid(0)
	return err == nil && fg == own
}
