package release

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Bump makes every workspace module require the others at version, and
// go.work replace exactly those versions with the working tree: the
// commit that follows the root's tag in a release.
func Bump(ctx context.Context, ws *Workspace, version string) error {
	for _, m := range ws.Modules {
		for _, r := range ws.Internal(m) {
			if err := run(ctx, filepath.Join(ws.Root, m.Dir), nil, "go", "mod", "edit", "-require="+r.Path+"@"+version); err != nil {
				return err
			}
		}
	}
	args := []string{"work", "edit"}
	for _, r := range ws.Replaces {
		if ws.Module(r.Path) != nil {
			old := r.Path
			if r.Version != "" {
				old += "@" + r.Version
			}
			args = append(args, "-dropreplace="+old)
		}
	}
	for _, m := range ws.Modules {
		if required(ws, m.Path) {
			args = append(args, "-replace="+m.Path+"@"+version+"="+workDir(m.Dir))
		}
	}
	return run(ctx, ws.Root, nil, "go", args...)
}

// required reports whether a workspace module requires the module path.
func required(ws *Workspace, path string) bool {
	for _, m := range ws.Modules {
		for _, r := range ws.Internal(m) {
			if r.Path == path {
				return true
			}
		}
	}
	return false
}

// workDir writes a module directory as go.work does: ./ or ./DIR.
func workDir(dir string) string {
	if dir == "." {
		return "./"
	}
	return "./" + dir
}

// Tidy runs go mod tidy in every module that requires another workspace
// module, against a module proxy in tmp holding the working tree at the
// version they require, ahead of the usual proxy: it works before that
// version is published. The sums of the workspace modules, which are
// those of the working tree rather than of any release, are left out of
// the go.sum files (go.work replaces those modules anyway).
func Tidy(ctx context.Context, ws *Workspace, tmp string) error {
	version, err := ws.Version()
	if err != nil {
		return err
	}
	if err := PublishAll(ctx, ws, tmp, version); err != nil {
		return err
	}
	for _, m := range ws.Modules {
		if len(ws.Internal(m)) == 0 {
			continue
		}
		dir := filepath.Join(ws.Root, m.Dir)
		if err := run(ctx, dir, LocalProxyEnv(tmp), "go", "mod", "tidy"); err != nil {
			return err
		}
		if err := dropSums(filepath.Join(dir, "go.sum"), ws); err != nil {
			return err
		}
	}
	return nil
}

// LocalProxyEnv returns the environment that makes the go command fetch
// this repository's modules from the file-based proxy in dir, and every
// other module as usual: outside any workspace, with no checksum database
// lookups for github.com/lockkit modules. It uses a module cache of its
// own under dir — the usual cache keeps whatever an earlier publication of
// the same version held, and would serve it instead of the working tree —
// and fetches other modules from the usual cache's downloads first, so
// they need no network when they are already there.
func LocalProxyEnv(dir string) []string {
	proxy := goSetting("GOPROXY", "off")
	proxies := FileURL(dir)
	if cache := goSetting("GOMODCACHE", ""); cache != "" {
		proxies += "," + FileURL(filepath.Join(cache, "cache", "download"))
	}
	return []string{
		"GOWORK=off",
		"GOPROXY=" + proxies + "," + proxy,
		"GOMODCACHE=" + filepath.Join(dir, "modcache"),
		"GOFLAGS=-modcacherw",
		"GONOSUMDB=github.com/lockkit",
		"GOPRIVATE=",
		"GONOPROXY=",
	}
}

// goSetting returns the go command's setting of name, or def if it has none.
func goSetting(name, def string) string {
	out, err := exec.Command("go", "env", name).Output()
	if v := string(bytes.TrimSpace(out)); err == nil && v != "" {
		return v
	}
	return def
}

// FileURL returns the file:// URL of the directory dir.
func FileURL(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	abs = filepath.ToSlash(abs)
	if !strings.HasPrefix(abs, "/") {
		abs = "/" + abs // a Windows drive letter
	}
	return "file://" + abs
}

// dropSums removes from a go.sum the lines of workspace modules.
func dropSums(path string, ws *Workspace) error {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	} else if err != nil {
		return err
	}
	var out bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) > 0 && ws.Module(f[0]) != nil {
			continue
		}
		out.WriteString(sc.Text() + "\n")
	}
	return os.WriteFile(path, out.Bytes(), 0o644)
}

// run runs a command in dir with extra environment variables.
func run(ctx context.Context, dir string, env []string, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s in %s: %v\n%s", name, strings.Join(args, " "), dir, err, out)
	}
	return nil
}
