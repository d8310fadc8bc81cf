package release

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The README states the Go each module needs, in a table with a row for
// every module of go.work, and the go line of its go.mod agrees.
func TestGoVersionsDocumented(t *testing.T) {
	root := repoRoot(t)
	ws, err := Load(testContext(t, 2*time.Minute), root)
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	row := regexp.MustCompile("(?m)^\\| `([^`]+)`[^|]*\\| ([0-9.]+) \\|$")
	for _, m := range row.FindAllStringSubmatch(string(readme), -1) {
		rows[m[1]] = m[2]
	}
	for _, m := range ws.Modules {
		doc, ok := rows[m.Path]
		goLine := strings.Join(strings.SplitN(m.Go, ".", 3)[:2], ".") // 1.25.0 is 1.25
		switch {
		case !ok:
			t.Errorf("README.md's table of Go versions has no row for %s (go %s)", m.Path, m.Go)
		case doc != goLine:
			t.Errorf("README.md says %s needs Go %s; its go.mod says go %s", m.Path, doc, m.Go)
		}
	}
}
