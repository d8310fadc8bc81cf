package main

const hasDeathSignal = true
