// Command release runs the steps of a lockkit release over every module
// listed in go.work (see CONTRIBUTING.md, "Releasing"):
//
//	go run ./internal/release/cmd/release check
//	go run ./internal/release/cmd/release plan VERSION
//	go run ./internal/release/cmd/release bump VERSION
//	go run ./internal/release/cmd/release tidy
//	go run ./internal/release/cmd/release publish DIR [VERSION]
//
// Run it from anywhere in the repository.
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"

	"github.com/lockkit/lock/internal/release"
)

const usage = `usage: release COMMAND
  check                  check go.work and every go.mod: no replace directive,
                         one version for the requirements between modules
  plan VERSION           print the steps of releasing VERSION, tags in order
  bump VERSION           make the modules require each other at VERSION, and
                         go.work replace that version with the working tree
  tidy                   go mod tidy every module that requires another,
                         against a local proxy of the working tree
  publish DIR [VERSION]  write every module to a file-based module proxy in
                         DIR (GOPROXY=file://DIR), at VERSION or the version
                         the modules require
`

func main() {
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

var semver = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`)

func run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	out, err := exec.CommandContext(ctx, "go", "env", "GOWORK").Output()
	work := strings.TrimSpace(string(out))
	if err != nil || work == "" || work == "off" {
		return fmt.Errorf("no go.work found: run this inside the repository")
	}
	root := strings.TrimSuffix(work, "go.work")
	ws, err := release.Load(ctx, root)
	if err != nil {
		return err
	}
	version := func(i int) (string, error) {
		if len(args) <= i {
			return ws.Version()
		}
		if !semver.MatchString(args[i]) {
			return "", fmt.Errorf("%q is not a version such as v1.2.3", args[i])
		}
		return args[i], nil
	}
	switch args[0] {
	case "check":
		if err := ws.Check(); err != nil {
			return err
		}
		v, err := ws.Version()
		if err != nil {
			return err
		}
		fmt.Printf("ok: %d modules; they require each other at %s\n", len(ws.Modules), v)
		return nil
	case "plan":
		if len(args) != 2 {
			return fmt.Errorf("plan wants VERSION")
		}
		v, err := version(1)
		if err != nil {
			return err
		}
		return plan(ws, v)
	case "bump":
		if len(args) != 2 {
			return fmt.Errorf("bump wants VERSION")
		}
		v, err := version(1)
		if err != nil {
			return err
		}
		return release.Bump(ctx, ws, v)
	case "tidy":
		tmp, err := os.MkdirTemp("", "lockkit-proxy-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		return release.Tidy(ctx, ws, tmp)
	case "publish":
		if len(args) < 2 || len(args) > 3 {
			return fmt.Errorf("publish wants DIR [VERSION]")
		}
		v, err := version(2)
		if err != nil {
			return err
		}
		if err := release.PublishAll(ctx, ws, args[1], v); err != nil {
			return err
		}
		fmt.Printf("published %d modules at %s; use them with:\n  export %s\n", len(ws.Modules), v, strings.Join(release.LocalProxyEnv(args[1]), " "))
		return nil
	}
	return fmt.Errorf("unknown command %q\n%s", args[0], usage)
}

// plan prints the steps of a release.
func plan(ws *release.Workspace, v string) error {
	order, err := ws.TagOrder()
	if err != nil {
		return err
	}
	fmt.Printf(`# 1. On a branch from main: CHANGELOG.md's "Unreleased" becomes %[1]s, and
#    the modules require each other at %[1]s. Commit, get CI green, merge.
go run ./internal/release/cmd/release bump %[1]s
go run ./internal/release/cmd/release tidy
go test ./internal/release/   # a consumer of every module, built from a local proxy
git commit -am "Release %[1]s"
# 2. Tag every module on that commit of main, and push the tags in this
#    order: each module after the modules it requires, the root first.
`, v)
	for _, m := range order {
		fmt.Printf("git tag %[1]s && git push origin %[1]s\n", release.Tag(m, v))
	}
	fmt.Printf("# 3. Ask the public module proxy (the default GOPROXY) for each, in the same\n#    order, so that pkg.go.dev lists them:\n")
	for _, m := range order {
		fmt.Printf("GOWORK=off go list -m %s@%s\n", m.Path, v)
	}
	return nil
}
