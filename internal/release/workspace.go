package release

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Module is one module of the workspace.
type Module struct {
	Path     string    // module path, such as github.com/lockkit/lock/stores/goredis
	Dir      string    // directory relative to the repository root, "." for the root
	Go       string    // its go line
	Requires []Require // every requirement, direct and indirect
	Replaces int       // how many replace directives its go.mod has
}

// Require is one requirement of a go.mod.
type Require struct {
	Path, Version string
}

// Replace is one replace directive of go.work.
type Replace struct {
	Path, Version string // the module and version replaced ("" for every version)
	Dir           string // the directory that replaces it
}

// Workspace is the modules listed in a repository's go.work.
type Workspace struct {
	Root     string   // the repository root, absolute
	Go       string   // go.work's go line
	Modules  []Module // in go.work's order
	Replaces []Replace
}

// Load reads the go.work at root and the go.mod of every module it uses,
// with the go command (go work edit -json, go mod edit -json).
func Load(ctx context.Context, root string) (*Workspace, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	var work struct {
		Go      string
		Use     []struct{ DiskPath string }
		Replace []struct {
			Old struct{ Path, Version string }
			New struct{ Path string }
		}
	}
	if err := goJSON(ctx, root, &work, "work", "edit", "-json"); err != nil {
		return nil, err
	}
	ws := &Workspace{Root: root, Go: work.Go}
	for _, r := range work.Replace {
		ws.Replaces = append(ws.Replaces, Replace{Path: r.Old.Path, Version: r.Old.Version, Dir: filepath.Clean(r.New.Path)})
	}
	for _, u := range work.Use {
		dir := filepath.Clean(u.DiskPath)
		var mod struct {
			Module  struct{ Path string }
			Go      string
			Require []struct{ Path, Version string }
			Replace []json.RawMessage
		}
		if err := goJSON(ctx, filepath.Join(root, dir), &mod, "mod", "edit", "-json"); err != nil {
			return nil, err
		}
		m := Module{Path: mod.Module.Path, Dir: filepath.ToSlash(dir), Go: mod.Go, Replaces: len(mod.Replace)}
		for _, r := range mod.Require {
			m.Requires = append(m.Requires, Require{Path: r.Path, Version: r.Version})
		}
		ws.Modules = append(ws.Modules, m)
	}
	return ws, nil
}

// goJSON runs the go command in dir and decodes its JSON output into v.
func goJSON(ctx context.Context, dir string, v any, args ...string) error {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("go %s in %s: %v: %s", strings.Join(args, " "), dir, err, stderr.Bytes())
	}
	return json.Unmarshal(out, v)
}

// Module returns the workspace module with the given path, or nil.
func (ws *Workspace) Module(path string) *Module {
	for i := range ws.Modules {
		if ws.Modules[i].Path == path {
			return &ws.Modules[i]
		}
	}
	return nil
}

// Internal returns the requirements of m on other workspace modules.
func (ws *Workspace) Internal(m Module) []Require {
	var out []Require
	for _, r := range m.Requires {
		if ws.Module(r.Path) != nil {
			out = append(out, r)
		}
	}
	return out
}

// Version returns the one version at which the workspace modules require
// each other: the version of the next release, or of the last one. It is
// an error if they disagree (a release half bumped) or if none requires
// another.
func (ws *Workspace) Version() (string, error) {
	seen := map[string][]string{}
	for _, m := range ws.Modules {
		for _, r := range ws.Internal(m) {
			seen[r.Version] = append(seen[r.Version], m.Dir+" requires "+r.Path+" "+r.Version)
		}
	}
	switch len(seen) {
	case 1:
		for v := range seen {
			return v, nil
		}
	case 0:
		return "", fmt.Errorf("no workspace module requires another")
	}
	var all []string
	for _, s := range seen {
		all = append(all, s...)
	}
	slices.Sort(all)
	return "", fmt.Errorf("the workspace modules require each other at different versions (bump them together): %s", strings.Join(all, "; "))
}

// Check reports what would break consumers or the workspace: a replace
// directive in a module's go.mod (consumers ignore it, and go install
// pkg@version refuses the module), a requirement on a workspace module at a
// version that go.work does not replace with the working tree (the go
// command would download that version's go.mod), or a module whose go line
// is above go.work's.
func (ws *Workspace) Check() error {
	var errs []string
	for _, m := range ws.Modules {
		if m.Replaces > 0 {
			errs = append(errs, fmt.Sprintf("%s/go.mod has %d replace directives: consumers ignore them and go install %s@VERSION refuses them; put them in go.work", m.Dir, m.Replaces, m.Path))
		}
		for _, r := range ws.Internal(m) {
			dep := ws.Module(r.Path)
			if !slices.Contains(ws.Replaces, Replace{Path: r.Path, Version: r.Version, Dir: filepath.Clean(dep.Dir)}) {
				errs = append(errs, fmt.Sprintf("%s requires %s %s, but go.work has no 'replace %s %s => ./%s'", m.Dir, r.Path, r.Version, r.Path, r.Version, dep.Dir))
			}
		}
		if compareGo(m.Go, ws.Go) > 0 {
			errs = append(errs, fmt.Sprintf("%s/go.mod says go %s, above go.work's go %s", m.Dir, m.Go, ws.Go))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return nil
}

// TagOrder returns the modules in the order their tags must be pushed:
// each after every workspace module it requires, the root first.
func (ws *Workspace) TagOrder() ([]Module, error) {
	var order []Module
	done := map[string]bool{}
	visiting := map[string]bool{}
	var visit func(m Module) error
	visit = func(m Module) error {
		switch {
		case done[m.Path]:
			return nil
		case visiting[m.Path]:
			return fmt.Errorf("workspace modules require each other in a cycle through %s", m.Path)
		}
		visiting[m.Path] = true
		for _, r := range ws.Internal(m) {
			if err := visit(*ws.Module(r.Path)); err != nil {
				return err
			}
		}
		done[m.Path] = true
		order = append(order, m)
		return nil
	}
	for _, m := range ws.Modules {
		if err := visit(m); err != nil {
			return nil, err
		}
	}
	return order, nil
}

// Tag returns the git tag of m at version: vX.Y.Z for the root module,
// DIR/vX.Y.Z for a nested one.
func Tag(m Module, version string) string {
	if m.Dir == "." {
		return version
	}
	return m.Dir + "/" + version
}

// compareGo compares two go versions such as 1.25.0 and 1.26.
func compareGo(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < max(len(pa), len(pb)); i++ {
		var x, y int
		if i < len(pa) {
			fmt.Sscan(pa[i], &x)
		}
		if i < len(pb) {
			fmt.Sscan(pb[i], &y)
		}
		if x != y {
			return x - y
		}
	}
	return 0
}
