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
