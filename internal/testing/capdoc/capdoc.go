// Package capdoc checks a store package's documentation of its optional
// capabilities against the interfaces of package lock its type
// implements, so that users who read "Every optional capability" or a
// list of them can rely on it.
package capdoc

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/lockkit/lock"
)

// Optional lists the optional capabilities of package lock, each with a
// check of whether a store implements it.
var Optional = []struct {
	Name string
	Has  func(store any) bool
}{
	{"Extender", is[lock.Extender]},
	{"TTLReader", is[lock.TTLReader]},
	{"HolderReader", is[lock.HolderReader]},
	{"Fencer", is[lock.Fencer]},
	{"FenceRaiser", is[lock.FenceRaiser]},
	{"Waiter", is[lock.Waiter]},
	{"Queuer", is[lock.Queuer]},
	{"Granular", is[lock.Granular]},
	{"ResourceValidator", is[lock.ResourceValidator]},
	{"Permitter", is[lock.Permitter]},
	{"PermitWaiter", is[lock.PermitWaiter]},
	{"Starter", is[lock.Starter]},
}

func is[I any](store any) bool { _, ok := store.(I); return ok }

// capability is a mention of an interface of package lock: lock.Extender
// or [lock.Extender].
var capability = regexp.MustCompile(`lock\.([A-Z][A-Za-z]*)`)

// Check reads the "# Capabilities" section of the package documentation
// in docFile and fails t unless it says which optional capabilities store
// implements, and only those:
//   - every capability the section names before "does not implement" (if
//     it says so) is implemented, and every one it names after is not;
//   - every capability store implements is named;
//   - a section that opens with "Every optional capability" names, in
//     that sentence after "but", each one store lacks.
func Check(t testing.TB, store any, docFile string) {
	t.Helper()
	src, err := os.ReadFile(docFile)
	if err != nil {
		t.Fatal(err)
	}
	var section []string
	in := false
	for line := range strings.Lines(string(src)) {
		text := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "//"))
		if strings.HasPrefix(text, "# ") {
			if in {
				break
			}
			in = text == "# Capabilities"
			continue
		}
		if in {
			section = append(section, text)
		}
	}
	if len(section) == 0 {
		t.Fatalf("%s has no # Capabilities section", docFile)
	}
	text := strings.Join(section, " ")
	claims, disclaims, _ := strings.Cut(text, "does not implement")
	named := func(s string) []string {
		var out []string
		for _, m := range capability.FindAllStringSubmatch(s, -1) {
			out = append(out, m[1])
		}
		return out
	}
	claimed, disclaimed := named(claims), named(disclaims)
	var every, exceptions string
	if i := strings.Index(text, "Every optional capability"); i >= 0 {
		every, _, _ = strings.Cut(text[i:], ":")
		_, exceptions, _ = strings.Cut(every, " but ")
	}
	for _, c := range Optional {
		has := c.Has(store)
		switch {
		case slices.Contains(claimed, c.Name) && !has:
			t.Errorf("%s names lock.%s among its capabilities; %T does not implement it", docFile, c.Name, store)
		case slices.Contains(disclaimed, c.Name) && has:
			t.Errorf("%s says the store does not implement lock.%s; %T does", docFile, c.Name, store)
		case has && !slices.Contains(claimed, c.Name):
			t.Errorf("%T implements lock.%s; %s does not name it among its capabilities", store, c.Name, docFile)
		case every != "" && !has && !strings.Contains(exceptions, c.Name):
			t.Errorf("%s says %q; %T does not implement lock.%s, and the sentence does not except it", docFile, every, store, c.Name)
		}
	}
}
