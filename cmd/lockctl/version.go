package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
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
	// A build that recorded a commit was made in a source tree, whatever
	// its version: since Go 1.24 such a build's is a pseudo-version made
	// from the commit (v0.0.0-DATE-COMMIT, +dirty with changes), which
	// would read as a release's.
	if v := bi.Main.Version; v != "" && v != "(devel)" && rev == "" {
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
