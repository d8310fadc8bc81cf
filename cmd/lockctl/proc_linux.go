package main

import "syscall"

// setDeathSignal makes the kernel kill the command if lockctl dies: its
// lock would no longer be extended.
func setDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
