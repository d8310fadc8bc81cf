package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// versionText is what lockctl --version prints: the module version the
// binary was built from ("lockctl v0.2.0 (go1.26.1 linux/amd64)"). Built
// from a source tree rather than a release, the version is "(devel)",
// followed by the commit when the build recorded it.
func versionText(bi *debug.BuildInfo, ok bool) string {
	platform := runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
	if !ok {
		return fmt.Sprintf("lockctl, unknown version: built without module support (%s)\n", platform)
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" && !fromSourceTree(v, rev) {
		return fmt.Sprintf("lockctl %s (%s)\n", v, platform)
	}
	from := "built from a source tree"
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		from += " at commit " + rev
		if modified == "true" {
			from += ", with changes"
		}
	}
	return fmt.Sprintf("lockctl (devel), %s (%s)\n", from, platform)
}

// fromSourceTree reports whether version, recorded with the commit rev,
// is not a release's: since Go 1.24 a build in a git checkout gets a
// version made from its commit (v0.0.0-DATE-COMMIT, "+dirty" with
// changes), and only a build of a tagged commit without changes gets the
// tag.
func fromSourceTree(version, rev string) bool {
	if rev == "" {
		return false
	}
	return strings.HasSuffix(version, "+dirty") || strings.HasSuffix(version, rev[:min(12, len(rev))])
}
