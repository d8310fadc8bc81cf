package conformance_test

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// exampleLine is a line of the example failure in the documentation: a
// file:line and what the suite logged there.
var exampleLine = regexp.MustCompile(`(?m)^(?://)?\s*([a-z_]+\.go:\d+: .+)$`)

// TestDocExample checks that the example failure shown in the package
// documentation and in docs/stores.md is what the suite prints, line
// numbers included, for a store that releases without checking the token.
func TestDocExample(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestControlChild$/^ReleaseWrongToken$", "-test.v")
	cmd.Env = append(os.Environ(), controlEnv+"=release-without-token-check")
	out, _ := cmd.CombinedOutput()
	for _, doc := range []string{"doc.go", "../docs/stores.md"} {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		lines := exampleLine.FindAllStringSubmatch(string(text), -1)
		if len(lines) != 2 {
			t.Errorf("%s shows %d lines of an example failure; want 2 (the call and the rule)", doc, len(lines))
		}
		for _, l := range lines {
			if !strings.Contains(string(out), l[1]) {
				t.Errorf("%s shows the example failure line\n\t%s\nwhich the suite does not print for a store that releases with any token; it prints:\n%s", doc, l[1], out)
			}
		}
	}
}

// TestFencerDocSaysNeverZero checks that the documentation of lock.Fencer,
// in the package and in docs/stores.md, says what FencingIncreases
// enforces: a fence is never 0, the Fence of a lock taken without fencing.
// A store that follows the documentation must pass the suite.
func TestFencerDocSaysNeverZero(t *testing.T) {
	src, err := os.ReadFile("../store.go")
	if err != nil {
		t.Fatal(err)
	}
	text := string(src)
	end := strings.Index(text, "type Fencer interface")
	start := strings.LastIndex(text[:end], "// Fencer is")
	if end < 0 || start < 0 {
		t.Fatal("store.go: no documented Fencer interface")
	}
	if doc := text[start:end]; !strings.Contains(doc, "never 0") {
		t.Errorf("the doc of lock.Fencer does not say that a fence is never 0, which the suite requires:\n%s", doc)
	}
	md, err := os.ReadFile("../docs/stores.md")
	if err != nil {
		t.Fatal(err)
	}
	row := ""
	for _, line := range strings.Split(string(md), "\n") {
		if strings.HasPrefix(line, "| `lock.Fencer` |") {
			row = line
		}
	}
	if !strings.Contains(row, "never 0") {
		t.Errorf("docs/stores.md: the lock.Fencer row does not say that a fence is never 0, which the suite requires:\n%s", row)
	}
}
