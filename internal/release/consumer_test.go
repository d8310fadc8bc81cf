package release

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The proof that consumers can fetch every module: the working tree is
// published to a module proxy in a temporary directory, at the version the
// modules require each other at, and a fresh module outside the repository
// gets and imports every package of every module (main packages are
// installed, and lockctl run) with the go command as a user runs it:
// GOPROXY=file://DIR first, then the module cache and the usual proxy for
// third-party modules; GOFLAGS=-mod=mod; no go.work; GONOSUMDB for our
// modules, which no checksum database knows yet.
func TestConsumerFromModuleProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every module from a local module proxy")
	}
	ctx := testContext(t, 12*time.Minute)
	ws, err := Load(ctx, repoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := ws.Check(); err != nil {
		t.Fatalf("go.work and go.mod files: %v", err)
	}
	version, err := ws.Version()
	if err != nil {
		t.Fatal(err)
	}
	proxy := t.TempDir()
	if err := PublishAll(ctx, ws, proxy, version); err != nil {
		t.Fatal(err)
	}
	for _, m := range ws.Modules {
		checkZip(t, proxy, m, version)
	}

	c := newConsumer(t, ctx, []string{FileURL(proxy), FileURL(goEnv(t, "GOMODCACHE") + "/cache/download"), goEnv(t, "GOPROXY")})
	c.seedSums(ws)
	var libs, mains []string
	for _, m := range ws.Modules {
		l, mm := packages(t, ctx, ws, m)
		libs = append(libs, l...)
		mains = append(mains, mm...)
	}
	get := []string{"get"}
	for _, m := range ws.Modules {
		get = append(get, m.Path+"@"+version)
	}
	c.goOK(c.dir, get...)
	c.writeMain(libs)
	c.goOK(c.dir, "build", "-o", "consumer", ".")
	if out := c.runOK(filepath.Join(c.dir, "consumer")); out != "locked and released demo\n" {
		t.Errorf("the consumer printed %q", out)
	}

	// Main packages install as the README says, @latest through the list
	// file; lockctl says which version it is.
	for _, pkg := range mains {
		c.goOK(c.home, "install", pkg+"@latest")
	}
	lockctl := filepath.Join(c.bin, "lockctl")
	if out := c.runOK(lockctl, "--version"); !strings.HasPrefix(out, "lockctl "+version+" ") {
		t.Errorf("lockctl --version = %q; want lockctl %s ...", out, version)
	}
	// go run PKG@latest works outside any module (help, doc.go and
	// docs/lockctl.md show it).
	out := c.goOK(c.home, "run", "github.com/lockkit/lock/cmd/lockctl@latest", "check", "--workers", "2", "--duration", "100ms")
	if !strings.Contains(out, "PASS") {
		t.Errorf("go run lockctl@latest check printed %q; want PASS", out)
	}
}

// The positive control: a module laid out as before this test existed (a
// nested module requiring a placeholder version of the root and relying on
// a replace directive) is refused by Check, and no consumer can build it.
func TestConsumerControl(t *testing.T) {
	ctx := testContext(t, 5*time.Minute)
	root := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const placeholder = "v0.0.0-00010101000000-000000000000"
	write("go.mod", "module github.com/lockkit/lock\n\ngo 1.25.0\n")
	write("lock.go", "package lock\n\nconst Name = \"lock\"\n")
	write("sub/go.mod", "module github.com/lockkit/lock/sub\n\ngo 1.25.0\n\nrequire github.com/lockkit/lock "+placeholder+"\n\nreplace github.com/lockkit/lock => ../\n")
	write("sub/sub.go", "package sub\n\nimport \"github.com/lockkit/lock\"\n\nconst Name = lock.Name\n")
	write("go.work", "go 1.25.0\n\nuse (\n\t.\n\t./sub\n)\n")
	if out, err := exec.CommandContext(ctx, "git", "-C", root, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	ws, err := Load(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	if err := ws.Check(); err == nil || !strings.Contains(err.Error(), "sub/go.mod has 1 replace directives") || !strings.Contains(err.Error(), "no 'replace github.com/lockkit/lock "+placeholder) {
		t.Errorf("Check() = %v; want the replace directive and the missing go.work replace reported", err)
	}
	proxy := t.TempDir()
	if err := PublishAll(ctx, ws, proxy, "v0.1.0"); err != nil {
		t.Fatal(err)
	}
	c := newConsumer(t, ctx, []string{FileURL(proxy), "off"})
	out, err := c.goCmd(c.dir, "get", "github.com/lockkit/lock/sub@v0.1.0")
	if err == nil || !strings.Contains(out, placeholder) {
		t.Errorf("go get of a module requiring the placeholder version: %v, %s; want a failure naming %s", err, out, placeholder)
	}
}

// consumer is a fresh module outside the repository, with a module cache,
// a GOBIN and a home of its own.
type consumer struct {
	t              *testing.T
	ctx            context.Context
	dir, bin, home string
	env            []string
}

func newConsumer(t *testing.T, ctx context.Context, proxies []string) *consumer {
	base := t.TempDir()
	c := &consumer{t: t, ctx: ctx, dir: filepath.Join(base, "consumer"), bin: filepath.Join(base, "bin"), home: filepath.Join(base, "home")}
	for _, d := range []string{c.dir, c.bin, c.home} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	modcache := filepath.Join(base, "modcache")
	c.env = append(os.Environ(),
		"GOWORK=off",
		"GOPROXY="+strings.Join(proxies, ","),
		"GOFLAGS=-mod=mod -modcacherw -trimpath", // -trimpath: the build cache serves what other tests built
		"GONOSUMDB=github.com/lockkit",
		"GOPRIVATE=", "GONOPROXY=", "GOINSECURE=",
		"GOMODCACHE="+modcache,
		"GOBIN="+c.bin,
		"GOTOOLCHAIN=local", // every module's go line must suit the Go in use
		"LOCKCTL_STORES=",
	)
	t.Cleanup(func() {
		// The module cache is read-only but for -modcacherw; clean it with
		// the go command all the same.
		cmd := exec.Command("go", "clean", "-modcache")
		cmd.Env = c.env
		_ = cmd.Run()
	})
	if err := os.WriteFile(filepath.Join(c.dir, "go.mod"), []byte("module example.com/consumer\n\ngo 1.25.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return c
}

// seedSums gives the consumer the sums of every third-party module the
// repository uses, so that the go command need not ask the checksum
// database for them.
func (c *consumer) seedSums(ws *Workspace) {
	var lines []string
	for _, m := range ws.Modules {
		data, err := os.ReadFile(filepath.Join(ws.Root, m.Dir, "go.sum"))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			if f := strings.Fields(sc.Text()); len(f) == 3 && ws.Module(f[0]) == nil {
				lines = append(lines, sc.Text())
			}
		}
	}
	slices.Sort(lines)
	lines = slices.Compact(lines)
	if err := os.WriteFile(filepath.Join(c.dir, "go.sum"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		c.t.Fatal(err)
	}
}

// writeMain writes a program that imports every package of pkgs and takes
// a lock on the memory store.
func (c *consumer) writeMain(pkgs []string) {
	var b strings.Builder
	b.WriteString("package main\n\nimport (\n\t\"context\"\n\t\"fmt\"\n\t\"time\"\n\n")
	for _, p := range pkgs {
		switch p {
		case "github.com/lockkit/lock", "github.com/lockkit/lock/stores/memory":
		default:
			fmt.Fprintf(&b, "\t_ %q\n", p)
		}
	}
	b.WriteString(`
	"github.com/lockkit/lock"
	"github.com/lockkit/lock/stores/memory"
)

func main() {
	ctx := context.Background()
	locker, err := lock.NewSingle(memory.New(), nil)
	if err != nil {
		panic(err)
	}
	l, err := locker.TryLock(ctx, "demo", time.Minute)
	if err != nil {
		panic(err)
	}
	if err := locker.Unlock(ctx, l); err != nil {
		panic(err)
	}
	fmt.Println("locked and released", l.Resource)
}
`)
	if err := os.WriteFile(filepath.Join(c.dir, "main.go"), []byte(b.String()), 0o644); err != nil {
		c.t.Fatal(err)
	}
}

func (c *consumer) goCmd(dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(c.ctx, "go", args...)
	cmd.Dir, cmd.Env = dir, c.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (c *consumer) goOK(dir string, args ...string) string {
	c.t.Helper()
	out, err := c.goCmd(dir, args...)
	if err != nil {
		c.t.Fatalf("go %s (in %s): %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return out
}

func (c *consumer) runOK(name string, args ...string) string {
	c.t.Helper()
	cmd := exec.CommandContext(c.ctx, name, args...)
	cmd.Dir, cmd.Env = c.home, c.env
	out, err := cmd.Output()
	if err != nil {
		c.t.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
	}
	return string(out)
}

// packages returns the import paths of m's packages that other modules
// can import (neither main nor internal) and of its main packages.
func packages(t *testing.T, ctx context.Context, ws *Workspace, m Module) (libs, mains []string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, "go", "list", "-f", "{{.Name}} {{.ImportPath}}", "./...")
	cmd.Dir = filepath.Join(ws.Root, m.Dir)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./... in %s: %v", m.Dir, err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		name, path, _ := strings.Cut(line, " ")
		switch {
		case strings.Contains(path+"/", "/internal/"):
		case name == "main":
			mains = append(mains, path)
		default:
			libs = append(libs, path)
		}
	}
	return libs, mains
}

// checkZip checks that the zip of m holds its go.mod and a LICENSE, and
// nothing of the modules nested in it.
func checkZip(t *testing.T, proxy string, m Module, version string) {
	t.Helper()
	esc, _ := escapePath(m.Path)
	zr, err := zip.OpenReader(filepath.Join(proxy, esc, "@v", version+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	prefix := m.Path + "@" + version + "/"
	var names []string
	for _, f := range zr.File {
		name, ok := strings.CutPrefix(f.Name, prefix)
		if !ok {
			t.Fatalf("%s: %s is not under %s", m.Path, f.Name, prefix)
		}
		names = append(names, name)
		if strings.Count(name, "go.mod") > 0 && name != "go.mod" && !strings.Contains(name, "testdata/") {
			t.Errorf("%s's zip holds %s, a nested module's file", m.Path, name)
		}
	}
	for _, want := range []string{"go.mod", "LICENSE"} {
		if !slices.Contains(names, want) {
			t.Errorf("%s's zip has no %s (pkg.go.dev shows no docs without a license)", m.Path, want)
		}
	}
}

func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}

// repoRoot returns the directory of the go.work above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	gowork := goEnv(t, "GOWORK")
	if gowork == "" || gowork == "off" {
		t.Fatal("no go.work: run the test inside the repository, with GOWORK unset")
	}
	return filepath.Dir(gowork)
}

// testContext bounds the go commands of a test: by d, or sooner by the
// test's deadline.
func testContext(t *testing.T, d time.Duration) context.Context {
	deadline := time.Now().Add(d)
	if td, ok := t.Deadline(); ok && td.Add(-10*time.Second).Before(deadline) {
		deadline = td.Add(-10 * time.Second)
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	t.Cleanup(cancel)
	return ctx
}
