package main

import (
	"strings"
	"testing"
)

// The JSON that status, check and bench print shows names as they are:
// '&', '<' and '>' are not escaped as for HTML.
func TestJSONOutputKeepsHTMLCharacters(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"status", "--json", "--store", "memory://", "a&b<c>"}, `"resource": "a&b<c>"`},
		{[]string{"status", "--json", "-n", "2", "--store", "memory://", "a&b<c>"}, `"resource": "a&b<c>"`},
		{[]string{"check", "--json", "--workers", "1", "--duration", "10ms", "--store", "memory://a&b<c>"}, `"memory://a&b<c>"`},
		{[]string{"bench", "--json", "--workers", "1", "--duration", "10ms", "--store", "memory://a&b<c>"}, `"memory://a&b<c>"`},
	} {
		code, out, errOut := runCLI(t, nil, tc.args...)
		if code != exitOK || !strings.Contains(out, tc.want) {
			t.Errorf("lockctl %s: exit %d, stdout %q, stderr %q; want 0 and %s", strings.Join(tc.args, " "), code, out, errOut, tc.want)
		}
	}
}
