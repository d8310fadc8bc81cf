//go:build race

package main

// raceEnabled makes the end-to-end tests build lockctl with the race
// detector when they run with it.
const raceEnabled = true
