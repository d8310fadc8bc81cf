package main

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"
)

// Shell completion: lockctl completion SHELL prints a script that asks
// lockctl itself for the candidates, with the hidden command
// "lockctl __complete WORDS...", whose last word is the one being
// completed. It prints one candidate a line; none lets the shell complete
// file names (lock files, the command of run).

const completeCommand = "__complete"

var completionCommand = &command{
	name:    "completion",
	summary: "print a shell completion script (bash, zsh, fish)",
	usage:   "completion bash|zsh|fish",
	doc: `Prints the script that completes lockctl's commands, flags, help topics and
store URL schemes in SHELL. Load it from your shell's startup file: bash
and zsh run lockctl to complete, so it must be on the PATH.`,
	examples: `  # bash, in ~/.bashrc:
  source <(lockctl completion bash)
  # zsh, in ~/.zshrc, after compinit:
  source <(lockctl completion zsh)
  # fish:
  lockctl completion fish > ~/.config/fish/completions/lockctl.fish`,
	flags: func(*flag.FlagSet) func(context.Context, *app, []string) error {
		return func(_ context.Context, a *app, args []string) error {
			if len(args) != 1 {
				return usagef("want one SHELL: bash, zsh or fish")
			}
			script, ok := completionScripts[args[0]]
			if !ok {
				return usagef("%q: want bash, zsh or fish", args[0])
			}
			_, err := fmt.Fprint(a.stdout, script)
			return err
		}
	},
}

var completionScripts = map[string]string{
	"bash": `# bash completion for lockctl. Load it with: source <(lockctl completion bash)
_lockctl() {
	local line=${COMP_LINE:0:COMP_POINT}
	local -a words
	read -ra words <<<"$line"
	[[ $line == *[[:space:]] ]] && words+=("")
	local cur=${words[${#words[@]}-1]} IFS=$'\n'
	COMPREPLY=($("${words[0]}" __complete "${words[@]:1}" 2>/dev/null))
	# bash splits words at : and =: complete what follows the last one.
	local head=${cur%"${cur##*[:=]}"} i
	if [[ -n $head ]]; then
		for i in "${!COMPREPLY[@]}"; do COMPREPLY[i]=${COMPREPLY[i]#"$head"}; done
	fi
	if [[ ${#COMPREPLY[@]} -eq 1 && ${COMPREPLY[0]} == */ ]]; then
		compopt -o nospace 2>/dev/null
	fi
}
complete -o default -F _lockctl lockctl
`,
	"zsh": `#compdef lockctl
# zsh completion for lockctl. Load it with: source <(lockctl completion zsh)
_lockctl() {
	local -a cands whole open
	cands=("${(@f)$("${words[1]}" __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}")
	cands=(${cands:#})
	if (( ! ${#cands} )); then
		_files
		return
	fi
	whole=(${cands:#*/})
	open=(${(M)cands:#*/})
	(( ${#whole} )) && compadd -Q -- "${whole[@]}"
	(( ${#open} )) && compadd -Q -S '' -- "${open[@]}"
	return 0
}
if (( $+functions[compdef] )); then
	compdef _lockctl lockctl
fi
`,
	"fish": `# fish completion for lockctl. Install it with:
#   lockctl completion fish > ~/.config/fish/completions/lockctl.fish
function __lockctl_complete
	set -l words (commandline -opc) (commandline -ct)
	set -l out ($words[1] __complete $words[2..-1] 2>/dev/null)
	if test (count $out) -gt 0
		printf '%s\n' $out
	else
		__fish_complete_path (commandline -ct)
	end
end
complete -c lockctl -f -a '(__lockctl_complete)'
`,
}

// helpTopics are the topics of lockctl help besides the commands.
var helpTopics = []string{"stores", "exit-codes"}

// complete is lockctl __complete: it prints the candidates for the last
// of words, given the words before it.
func (a *app) complete(words []string) int {
	if len(words) == 0 {
		words = []string{""}
	}
	cur := words[len(words)-1]
	for _, c := range candidates(words[:len(words)-1], cur) {
		if strings.HasPrefix(c, cur) {
			fmt.Fprintln(a.stdout, c)
		}
	}
	return exitOK
}

// candidates returns what may follow the words before (the command and
// its arguments so far) at the word cur.
func candidates(before []string, cur string) []string {
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = c.name
	}
	if len(before) == 0 {
		return append(names, "help", "--help", "--version")
	}
	switch before[0] {
	case "help":
		if len(before) == 1 {
			return append(names, helpTopics...)
		}
		return nil
	case "completion":
		if len(before) == 1 {
			return []string{"bash", "fish", "zsh"}
		}
		return nil
	}
	cmd := lookup(before[0])
	if cmd == nil {
		return nil
	}
	fs := newFlagSet(cmd.name)
	cmd.flags(fs)
	// Past the resource of run or the role of elect, or after --, come a
	// command and its arguments: the shell's own completion knows them.
	pos := 0
	for i := 1; i < len(before); i++ {
		w := before[i]
		switch {
		case w == "--":
			return nil
		case strings.HasPrefix(w, "-"):
			if f := fs.Lookup(strings.TrimLeft(w, "-")); f != nil && !isBoolFlag(f) {
				i++ // its value
			}
		default:
			pos++
		}
	}
	if (cmd == runCommand || cmd == electCommand) && pos > 0 {
		return nil
	}
	if last := before[len(before)-1]; strings.HasPrefix(last, "-") {
		if f := fs.Lookup(strings.TrimLeft(last, "-")); f != nil && !isBoolFlag(f) {
			return flagValues(f.Name)
		}
	}
	if name, _, ok := strings.Cut(cur, "="); ok && strings.HasPrefix(name, "-") {
		var out []string
		for _, v := range flagValues(strings.TrimLeft(name, "-")) {
			out = append(out, name+"="+v)
		}
		return out
	}
	if strings.HasPrefix(cur, "-") {
		var out []string
		fs.VisitAll(func(f *flag.Flag) { out = append(out, "--"+f.Name) })
		return out
	}
	return nil
}

// flagValues returns the values worth offering for a flag: the URL
// schemes of the stores, the quorums.
func flagValues(name string) []string {
	switch name {
	case "store":
		var out []string
		for s := range schemes {
			out = append(out, s+"://")
		}
		slices.Sort(out)
		return out
	case "quorum":
		return []string{"all", "majority"}
	case "wait":
		return []string{"forever"}
	}
	return nil
}

// isBoolFlag reports whether f takes no value.
func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}
