package main

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionText(t *testing.T) {
	for _, tc := range []struct {
		bi   *debug.BuildInfo
		ok   bool
		want string
	}{
		{&debug.BuildInfo{Main: debug.Module{Version: "v0.3.1"}}, true, "lockctl v0.3.1 ("},
		{&debug.BuildInfo{Main: debug.Module{Version: "v0.3.2-0.20260101120000-abcdef012345"}}, true, "lockctl v0.3.2-0.20260101120000-abcdef012345 ("},
		{&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, true, "lockctl (devel), built from a source tree ("},
		{&debug.BuildInfo{Main: debug.Module{Version: ""}}, true, "lockctl (devel), built from a source tree ("},
		{&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"},
		}}, true, "lockctl (devel), built from a source tree at commit 0123456789ab, with changes ("},
		// Go 1.24 and later stamp a build in a git checkout with a
		// pseudo-version made from its commit.
		{&debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261207203520-90394e25b8c3+dirty"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "90394e25b8c3aaaabbbbcccc"}, {Key: "vcs.modified", Value: "true"},
		}}, true, "lockctl (devel), built from a source tree at commit 90394e25b8c3, with changes ("},
		{&debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261207203520-90394e25b8c3"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "90394e25b8c3aaaabbbbcccc"}, {Key: "vcs.modified", Value: "false"},
		}}, true, "lockctl (devel), built from a source tree at commit 90394e25b8c3 ("},
		// A build of a tagged commit without changes gets the tag: a
		// release's version.
		{&debug.BuildInfo{Main: debug.Module{Version: "v0.3.1"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "90394e25b8c3aaaabbbbcccc"}, {Key: "vcs.modified", Value: "false"},
		}}, true, "lockctl v0.3.1 ("},
		{nil, false, "lockctl, unknown version: built without module support ("},
	} {
		got := versionText(tc.bi, tc.ok)
		if !strings.HasPrefix(got, tc.want) || !strings.HasSuffix(got, ")\n") || strings.Count(got, "\n") != 1 {
			t.Errorf("versionText(%+v) = %q; want one line starting %q", tc.bi, got, tc.want)
		}
	}
}
