//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package main

import "os"

// isTerminal reports false: lockctl cannot tell on this system.
func isTerminal(*os.File) bool { return false }

// inForeground reports false: lockctl cannot tell on this system.
func inForeground(*os.File) bool { return false }
