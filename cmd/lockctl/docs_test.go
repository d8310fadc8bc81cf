package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docs/lockctl.md shows the help of every command and topic as lockctl
// prints it, and the README and the package doc name every command and
// the go install and go run lines.
func TestDocsAgreeWithHelp(t *testing.T) {
	doc := readRepoFile(t, "docs/lockctl.md")
	blocks := helpBlocks(doc)
	want := []string{"lockctl help", "lockctl help stores", "lockctl help exit-codes"}
	for _, c := range commands {
		want = append(want, "lockctl "+c.name+" --help")
	}
	for _, w := range want {
		if _, ok := blocks[w]; !ok {
			t.Errorf("docs/lockctl.md shows no %q", "$ "+w)
		}
	}
	printed := map[string]string{}
	for line, text := range blocks {
		code, out, stderr := runCLI(t, nil, strings.Fields(line)[1:]...)
		printed[line] = out
		if code != exitOK {
			t.Errorf("%s: exit %d, %s", line, code, stderr)
			continue
		}
		if out != text {
			t.Errorf("docs/lockctl.md shows %q other than lockctl prints it: %s", line, firstDiff(text, out))
		}
	}

	readme := readRepoFile(t, "README.md")
	pkgDoc := readRepoFile(t, "cmd/lockctl/doc.go")
	for _, need := range []string{"go install github.com/lockkit/lock/cmd/lockctl@latest", "go run github.com/lockkit/lock/cmd/lockctl@latest check"} {
		for name, text := range map[string]string{"README.md": readme, "docs/lockctl.md": doc, "doc.go": pkgDoc} {
			if !strings.Contains(text, need) {
				t.Errorf("%s lacks %q", name, need)
			}
		}
	}
	// go run of a package path without a version fails outside a module.
	sources := map[string]string{"README.md": readme, "docs/lockctl.md": doc, "doc.go": pkgDoc}
	for line, text := range printed {
		sources[line] = text
	}
	for name, text := range sources {
		if strings.Contains(text, "go run github.com/lockkit/lock/cmd/lockctl ") {
			t.Errorf("%s shows go run github.com/lockkit/lock/cmd/lockctl without @latest", name)
		}
	}
	for _, c := range commands {
		for name, text := range map[string]string{"README.md": readme, "doc.go": pkgDoc} {
			if !strings.Contains(text, "lockctl "+c.name+" ") {
				t.Errorf("%s names no lockctl %s", name, c.name)
			}
		}
	}
}

// helpBlocks returns the help shown in the fenced blocks of a Markdown
// document: for each line "$ lockctl help ..." or "$ lockctl ... --help",
// the lines that follow it, up to the next "$ " line or the block's end.
func helpBlocks(doc string) map[string]string {
	blocks := map[string]string{}
	var cur string
	var text strings.Builder
	inBlock := false
	flush := func() {
		if cur != "" {
			blocks[cur] = text.String()
		}
		cur = ""
		text.Reset()
	}
	sc := bufio.NewScanner(strings.NewReader(doc))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "```"):
			flush()
			inBlock = !inBlock
		case !inBlock:
		case strings.HasPrefix(line, "$ "):
			flush()
			cmd := strings.TrimPrefix(line, "$ ")
			if f := strings.Fields(cmd); len(f) > 1 && f[0] == "lockctl" && (f[1] == "help" || f[len(f)-1] == "--help") {
				cur = cmd
			}
		case cur != "":
			text.WriteString(line + "\n")
		}
	}
	return blocks
}

// firstDiff describes the first line where want and got differ.
func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return fmt.Sprintf("line %d: the doc has %q, lockctl prints %q", i+1, a, b)
		}
	}
	return "same lines"
}

// readRepoFile reads a file of the repository, by its path from the root.
func readRepoFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(path)))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// The malformed store URLs that docs/lockctl.md shows under Errors give
// the message and the exit status shown there (usage errors only: they
// need no server).
func TestDocsShowUsageErrors(t *testing.T) {
	doc := readRepoFile(t, "docs/lockctl.md")
	_, section, _ := strings.Cut(doc, "\n## Errors\n")
	section, _, _ = strings.Cut(section, "\n## ")
	lines := strings.Split(section, "\n")
	checked := 0
	for i, line := range lines {
		cmd, ok := strings.CutPrefix(line, "$ lockctl status ")
		if !ok || i+3 >= len(lines) || lines[i+2] != "$ echo $?" || lines[i+3] != "2" {
			continue
		}
		var args []string
		for _, f := range strings.Fields(cmd) {
			args = append(args, strings.Trim(f, "'"))
		}
		args = append([]string{"status"}, args...)
		code, _, stderr := runCLI(t, nil, args...)
		first, _, _ := strings.Cut(stderr, "\n")
		if code != exitUsage || first != lines[i+1] {
			t.Errorf("lockctl %q: exit %d, %q; docs/lockctl.md shows exit 2, %q", args, code, first, lines[i+1])
		}
		checked++
	}
	if checked < 5 {
		t.Errorf("checked %d usage errors shown in docs/lockctl.md under Errors; want the 7 there", checked)
	}
}
