//go:build unix && !linux

package main

import "syscall"

// setDeathSignal does nothing: only Linux kills a child when its parent
// dies.
func setDeathSignal(*syscall.SysProcAttr) {}

// startReaper does nothing: without a death signal nothing can tell that
// lockctl died.
func startReaper(int, func(error)) (stop func()) { return func() {} }

// reaperMain reports that lockctl is never started as a reaper here.
func reaperMain() (code int, ok bool) { return 0, false }

// groupRunning cannot tell zombies apart here: see groupAlive.
func groupRunning(int) (alive, known bool) { return false, false }
