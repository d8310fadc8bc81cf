package release

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"
)

// Files lists the files of the repository at root that a release would
// publish: those git tracks, and those it would track (untracked but not
// ignored), as they are in the working tree. Paths use slashes.
func Files(ctx context.Context, root string) ([]string, error) {
	cmd := exec.CommandContext(ctx, "git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files in %s: %v: %s", root, err, stderr.Bytes())
	}
	var files []string
	for _, f := range strings.Split(string(out), "\x00") {
		if f == "" {
			continue
		}
		// Tracked files deleted in the working tree, and symbolic links,
		// which module zips cannot hold, are left out.
		if fi, err := os.Lstat(filepath.Join(root, f)); err == nil && fi.Mode().IsRegular() {
			files = append(files, f)
		}
	}
	slices.Sort(files)
	return slices.Compact(files), nil
}

// ModuleFiles returns the files of files (as Files returns them) that the
// module in dir holds: those below dir and not below another directory
// with a go.mod (a nested module) or a vendor directory.
func ModuleFiles(files []string, dir string) []string {
	var modDirs []string
	for _, f := range files {
		if path.Base(f) == "go.mod" {
			modDirs = append(modDirs, path.Dir(f))
		}
	}
	var out []string
	for _, f := range files {
		rel, ok := under(f, dir)
		if !ok {
			continue
		}
		nested := false
		for _, d := range modDirs {
			if d != dir && strings.HasPrefix(f, d+"/") && (dir == "." || strings.HasPrefix(d, dir+"/")) {
				nested = true
			}
		}
		if nested || rel == "vendor" || strings.HasPrefix(rel, "vendor/") || strings.Contains(rel, "/vendor/") {
			continue
		}
		out = append(out, rel)
	}
	return out
}

// under returns f relative to dir, if it is below it.
func under(f, dir string) (string, bool) {
	if dir == "." {
		return f, true
	}
	rel, ok := strings.CutPrefix(f, dir+"/")
	return rel, ok
}

// Publish writes module m of the repository at root, with the given files
// of the module (relative to its directory), to the module proxy in
// proxyDir at version, laid out as GOPROXY=file://proxyDir expects:
//
//	ESCAPED_PATH/@v/list          the versions, one a line
//	ESCAPED_PATH/@v/VERSION.info  {"Version": ..., "Time": ...}
//	ESCAPED_PATH/@v/VERSION.mod   the go.mod
//	ESCAPED_PATH/@v/VERSION.zip   every file under PATH@VERSION/
//
// As the go command does when it makes a zip from a repository, a nested
// module without a LICENSE gets the repository root's.
func Publish(proxyDir, root string, m Module, files []string, version string) error {
	esc, err := escapePath(m.Path)
	if err != nil {
		return err
	}
	dir := filepath.Join(proxyDir, filepath.FromSlash(esc), "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	src := filepath.Join(root, filepath.FromSlash(m.Dir))
	gomod, err := os.ReadFile(filepath.Join(src, "go.mod"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, version+".mod"), gomod, 0o644); err != nil {
		return err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, version+".info"), info, 0o644); err != nil {
		return err
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	prefix := m.Path + "@" + version + "/"
	add := func(name, from string) error {
		w, err := zw.Create(prefix + name)
		if err != nil {
			return err
		}
		f, err := os.Open(from)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(w, f)
		return err
	}
	for _, f := range files {
		if err := add(f, filepath.Join(src, filepath.FromSlash(f))); err != nil {
			return err
		}
	}
	if m.Dir != "." && !slices.Contains(files, "LICENSE") {
		if err := add("LICENSE", filepath.Join(root, "LICENSE")); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, version+".zip"), buf.Bytes(), 0o644); err != nil {
		return err
	}
	return appendVersion(filepath.Join(dir, "list"), version)
}

// appendVersion adds version to a proxy's list file, once.
func appendVersion(list, version string) error {
	data, err := os.ReadFile(list)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if slices.Contains(strings.Fields(string(data)), version) {
		return nil
	}
	return os.WriteFile(list, append(data, version+"\n"...), 0o644)
}

// PublishAll publishes every module of ws, as its files are in the
// working tree, to proxyDir at version.
func PublishAll(ctx context.Context, ws *Workspace, proxyDir, version string) error {
	files, err := Files(ctx, ws.Root)
	if err != nil {
		return err
	}
	for _, m := range ws.Modules {
		if err := Publish(proxyDir, ws.Root, m, ModuleFiles(files, m.Dir), version); err != nil {
			return fmt.Errorf("publishing %s: %w", m.Path, err)
		}
	}
	return nil
}

// escapePath escapes a module path for the proxy protocol: each capital
// letter becomes ! and the letter in lower case.
func escapePath(p string) (string, error) {
	var b strings.Builder
	for _, r := range p {
		switch {
		case r >= 'A' && r <= 'Z':
			b.WriteByte('!')
			b.WriteRune(unicode.ToLower(r))
		case r == '!' || r > unicode.MaxASCII:
			return "", fmt.Errorf("module path %q: %q cannot be escaped", p, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String(), nil
}
