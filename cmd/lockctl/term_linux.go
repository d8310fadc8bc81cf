package main

import "syscall"

const ioctlReadTermios = syscall.TCGETS
