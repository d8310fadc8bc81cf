package main

import (
	"context"
	"os"
)

func main() {
	if code, ok := reaperMain(); ok {
		os.Exit(code)
	}
	catchBrokenPipes()
	a := &app{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}
	os.Exit(a.main(context.Background(), os.Args[1:]))
}
