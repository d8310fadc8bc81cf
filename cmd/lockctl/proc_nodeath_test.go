//go:build !linux

package main

const hasDeathSignal = false
