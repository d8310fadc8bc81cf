package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lockkit/lock/internal/testing/testserver"
)

func TestCompletionCandidates(t *testing.T) {
	for _, tc := range []struct {
		words []string // the last is the word being completed
		want  []string
	}{
		{[]string{""}, []string{"run", "elect", "acquire", "extend", "release", "status", "check", "bench", "completion", "help", "--help", "--version"}},
		{[]string{"st"}, []string{"status"}},
		{[]string{"help", "e"}, []string{"elect", "extend", "exit-codes"}},
		{[]string{"completion", ""}, []string{"bash", "fish", "zsh"}},
		{[]string{"status", "--j"}, []string{"--json"}},
		{[]string{"run", "--st"}, []string{"--store", "--store-timeout"}},
		{[]string{"run", "--store", "redis+"}, []string{"redis+cluster://", "redis+sentinel://"}},
		{[]string{"status", "--store=mem"}, []string{"--store=memcache://", "--store=memory://"}},
		{[]string{"check", "--quorum", ""}, []string{"all", "majority"}},
		{[]string{"acquire", "--wait", "f"}, []string{"forever"}},
		// File names and commands are left to the shell.
		{[]string{"release", "--lock", ""}, nil},
		{[]string{"run", "--ttl", "1m", "job", ""}, nil},
		{[]string{"run", "job", "--", "--st"}, nil},
		{[]string{"run", "--quiet", "job", "l"}, nil},
		{[]string{"elect", "--ttl", "3s", "scheduler", "--v"}, nil},
		{[]string{"elect", "scheduler", ""}, nil},
		{[]string{"frobnicate", "--"}, nil},
	} {
		code, out, _ := runCLI(t, nil, append([]string{completeCommand}, tc.words...)...)
		got := strings.Fields(out)
		if code != exitOK || !slices.Equal(got, tc.want) {
			t.Errorf("lockctl __complete %q: exit %d, %q; want %q", tc.words, code, got, tc.want)
		}
	}
}

// Each shell's script, run by the real shell, completes through lockctl.
func TestCompletionScripts(t *testing.T) {
	path := "PATH=" + filepath.Dir(bin) + string(os.PathListSeparator) + os.Getenv("PATH")
	dir := t.TempDir()
	lockFile := filepath.Join(dir, "deploy.lock")
	if err := os.WriteFile(lockFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	shell := func(t *testing.T, name string, args ...string) string {
		t.Helper()
		sh := testserver.LookPath(t, name, "apt-get install -y "+name)
		cmd := exec.Command(sh, args...)
		cmd.Env = append(baseEnv(), path, "HOME="+dir, "XDG_CONFIG_HOME="+dir, "XDG_DATA_HOME="+dir)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %q: %v\n%s", name, args, err, out)
		}
		return string(out)
	}
	script := func(t *testing.T, sh string) string {
		code, out, stderr := lockctl(t, nil, "completion", sh)
		if code != 0 {
			t.Fatalf("completion %s: exit %d, %s", sh, code, stderr)
		}
		f := filepath.Join(t.TempDir(), "lockctl."+sh)
		if err := os.WriteFile(f, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	cases := []struct {
		line string // up to the cursor
		want []string
	}{
		{"lockctl sta", []string{"status"}},
		{"lockctl run --st", []string{"--store", "--store-timeout"}},
		{"lockctl completion ", []string{"bash", "fish", "zsh"}},
		{"lockctl status --store memc", []string{"memcache://"}},
	}
	t.Run("bash", func(t *testing.T) {
		f := script(t, "bash")
		for _, tc := range append(cases, struct {
			line string
			want []string
		}{"lockctl status --store redis:", []string{"//"}}) { // bash completes after the colon
			out := shell(t, "bash", "-c", `source "$1"; COMP_LINE=$2; COMP_POINT=${#COMP_LINE}; _lockctl; printf '%s\n' "${COMPREPLY[@]}"`, "bash", f, tc.line)
			if got := strings.Fields(out); !slices.Equal(got, tc.want) {
				t.Errorf("bash, %q: %q; want %q", tc.line, got, tc.want)
			}
		}
	})
	t.Run("zsh", func(t *testing.T) {
		f := script(t, "zsh")
		// compadd and _files exist only inside completion widgets: stand-ins
		// print what they are given.
		const stubs = `compadd() { while [[ $1 == -* && $1 != -- ]]; do [[ $1 == -S ]] && shift; shift; done; [[ $1 == -- ]] && shift; print -rl -- "$@"; }
_files() { print -r -- '(files)'; }
`
		for _, tc := range append(cases, struct {
			line string
			want []string
		}{"lockctl release --lock ", []string{"(files)"}}) {
			out := shell(t, "zsh", "-f", "-c", stubs+`source "$1"; words=(${(z)2}); [[ $2 == *' ' ]] && words+=(''); CURRENT=${#words}; _lockctl`, "zsh", f, tc.line)
			if got := strings.Fields(out); !slices.Equal(got, tc.want) {
				t.Errorf("zsh, %q: %q; want %q", tc.line, got, tc.want)
			}
		}
	})
	t.Run("fish", func(t *testing.T) {
		f := script(t, "fish")
		for _, tc := range append(cases, struct {
			line string
			want []string
		}{"lockctl release --lock " + filepath.Join(dir, "depl"), []string{lockFile}}) {
			out := shell(t, "fish", "--no-config", "-c", `source $argv[1]; complete -C $argv[2]`, f, tc.line)
			var got []string
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				if c, _, _ := strings.Cut(line, "\t"); c != "" {
					got = append(got, c)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("fish, %q: %q; want %q", tc.line, got, tc.want)
			}
		}
	})
}
