// Package release is the tooling of lockkit's releases: it reads the
// modules of the repository's go.work, checks that consumers can fetch
// them (no replace directive in a go.mod, one version for the requirements
// between them), orders their tags, bumps those requirements, and
// publishes the working tree to a file-based module proxy, so that a test
// can build a consumer module against the modules exactly as the proxy
// would serve them. CONTRIBUTING.md has the release procedure;
// cmd/release runs each step.
//
// It adds no dependency: the go command reads go.work and go.mod files
// (go work edit -json, go mod edit -json), and archive/zip writes the
// module zips.
package release
