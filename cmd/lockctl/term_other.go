//go:build !unix

package main

import "os"

// inForeground reports whether f is a terminal: without process groups,
// a terminal means an interactive prompt.
func inForeground(f *os.File) bool { return isTerminal(f) }
