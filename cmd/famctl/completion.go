package main

import (
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// completionCommand prints a shell completion script.
var completionCommand = &command{
	name: "completion", args: "bash|zsh", summary: "print a shell completion script for famctl",
	min: 1, max: 1, local: cmdCompletion,
	help: "bash: source <(famctl completion bash), or save it as\n" +
		"/usr/share/bash-completion/completions/famctl.\n" +
		"zsh: famctl completion zsh > \"${fpath[1]}/_famctl\" (then compinit), or\n" +
		"source <(famctl completion zsh) after compinit.\n" +
		"It completes commands, their subcommands and options, and region names\n" +
		"(asking the famd in $OPENFAM_SERVER, when set). No famd is contacted to\n" +
		"print the script.\n",
}

// subcommands are the fixed first arguments of the commands that take one.
var subcommands = map[string][]string{
	"token":      {"new"},
	"backups":    {"list", "delete"},
	"completion": {"bash", "zsh"},
}

// regionArgCommands take a region name first.
var regionArgCommands = map[string]bool{"items": true, "stat": true, "destroy-region": true, "chmod": true}

// flagNames are the options a command accepts (with the global ones), as
// "--name", and those among them that take a value.
func flagNames(c *command) (all, valued []string) {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	(&globals{}).register(fs)
	if c.flags != nil {
		c.flags(fs, &cmdOpts{})
	}
	fs.VisitAll(func(f *flag.Flag) {
		all = append(all, "--"+f.Name)
		if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); !ok || !bf.IsBoolFlag() {
			valued = append(valued, "--"+f.Name)
		}
	})
	all = append(all, "--help")
	sort.Strings(all)
	return all, valued
}

// globalFlags are the options accepted before COMMAND.
func globalFlags() (all, valued []string) {
	all, valued = flagNames(&command{name: "famctl"})
	return append(all, "--version"), valued
}

func cmdCompletion(_ *globals, _ *cmdOpts, args []string, stdout io.Writer) error {
	switch args[0] {
	case "bash":
		_, err := io.WriteString(stdout, bashCompletion())
		return err
	case "zsh":
		_, err := io.WriteString(stdout, zshCompletion())
		return err
	}
	return usagef("completion: want bash or zsh, not %q", args[0])
}

// commandNames are the words that may stand as COMMAND.
func commandNames() []string {
	var n []string
	for _, c := range commands {
		n = append(n, c.name)
	}
	return append(n, "help")
}

// valuedCase is a shell case pattern of the options that take a value:
// the word after one is its value, not a command.
func valuedCase() string {
	_, v := globalFlags()
	for _, c := range commands {
		_, cv := flagNames(c)
		v = append(v, cv...)
	}
	seen := map[string]bool{}
	var out []string
	for _, f := range v {
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return strings.Join(out, "|")
}

func bashCompletion() string {
	var b strings.Builder
	gAll, _ := globalFlags()
	fmt.Fprintf(&b, `# bash completion for famctl (famctl completion bash)
_famctl() {
    local cur prev cmd i w skip=0
    cur="${COMP_WORDS[COMP_CWORD]}"
    prev="${COMP_WORDS[COMP_CWORD-1]}"
    local -a pos=()
    for ((i = 1; i < COMP_CWORD; i++)); do
        w="${COMP_WORDS[i]}"
        if ((skip)); then skip=0; continue; fi
        case "$w" in
            %[1]s) skip=1; continue ;;
            -*) continue ;;
        esac
        pos+=("$w")
    done
    case "$prev" in
        --server|--token-file|--data-dir|--shm-dir)
            COMPREPLY=($(compgen -f -- "$cur")); return ;;
        %[1]s) COMPREPLY=(); return ;;
    esac
    if ((${#pos[@]} == 0)); then
        if [[ "$cur" == -* ]]; then
            COMPREPLY=($(compgen -W "%[2]s" -- "$cur"))
        else
            COMPREPLY=($(compgen -W "%[3]s" -- "$cur"))
        fi
        return
    fi
    cmd="${pos[0]}"
    if [[ "$cur" == -* ]]; then
        case "$cmd" in
`, valuedCase(), strings.Join(gAll, " "), strings.Join(commandNames(), " "))
	for _, c := range commands {
		all, _ := flagNames(c)
		fmt.Fprintf(&b, "            %s) COMPREPLY=($(compgen -W %s -- \"$cur\")) ;;\n", c.name, shellQuote(strings.Join(all, " ")))
	}
	b.WriteString(`        esac
        return
    fi
    case "$cmd" in
`)
	for _, name := range sortedKeys(subcommands) {
		fmt.Fprintf(&b, "        %s) if ((${#pos[@]} == 1)); then COMPREPLY=($(compgen -W %s -- \"$cur\")); fi; return ;;\n",
			name, shellQuote(strings.Join(subcommands[name], " ")))
	}
	fmt.Fprintf(&b, "        help) if ((${#pos[@]} == 1)); then COMPREPLY=($(compgen -W %s -- \"$cur\")); fi; return ;;\n",
		shellQuote(strings.Join(commandNames(), " ")))
	fmt.Fprintf(&b, `        %s)
            if ((${#pos[@]} == 1)) && [[ -n "$OPENFAM_SERVER" ]]; then
                COMPREPLY=($(compgen -W "$(famctl --timeout 2s regions 2>/dev/null | awk 'NR > 1 {print $2}')" -- "$cur"))
            fi
            return ;;
    esac
}
complete -F _famctl famctl
`, strings.Join(sortedKeys(regionArgCommands), "|"))
	return b.String()
}

func zshCompletion() string {
	var b strings.Builder
	gAll, _ := globalFlags()
	fmt.Fprintf(&b, `#compdef famctl
# zsh completion for famctl (famctl completion zsh)
_famctl() {
    local -a pos
    local i w skip=0
    for ((i = 2; i < CURRENT; i++)); do
        w="${words[i]}"
        if ((skip)); then skip=0; continue; fi
        case "$w" in
            %[1]s) skip=1; continue ;;
            -*) continue ;;
        esac
        pos+=("$w")
    done
    case "${words[CURRENT-1]}" in
        --server|--token-file|--data-dir|--shm-dir) _files; return ;;
        %[1]s) return ;;
    esac
    if ((${#pos} == 0)); then
        if [[ "${words[CURRENT]}" == -* ]]; then
            compadd -- %[2]s
        else
            local -a cmds
            cmds=(
`, valuedCase(), strings.Join(gAll, " "))
	for _, c := range commands {
		fmt.Fprintf(&b, "                %s\n", shellQuote(c.name+":"+c.summary))
	}
	b.WriteString(`                'help:describe famctl or one command'
            )
            _describe -t commands 'famctl command' cmds
        fi
        return
    fi
    local cmd="${pos[1]}"
    if [[ "${words[CURRENT]}" == -* ]]; then
        case "$cmd" in
`)
	for _, c := range commands {
		all, _ := flagNames(c)
		fmt.Fprintf(&b, "            %s) compadd -- %s ;;\n", c.name, strings.Join(all, " "))
	}
	b.WriteString(`        esac
        return
    fi
    case "$cmd" in
`)
	for _, name := range sortedKeys(subcommands) {
		fmt.Fprintf(&b, "        %s) ((${#pos} == 1)) && compadd -- %s ;;\n", name, strings.Join(subcommands[name], " "))
	}
	fmt.Fprintf(&b, "        help) ((${#pos} == 1)) && compadd -- %s ;;\n", strings.Join(commandNames(), " "))
	fmt.Fprintf(&b, `        %s)
            if ((${#pos} == 1)) && [[ -n "$OPENFAM_SERVER" ]]; then
                compadd -- ${(f)"$(famctl --timeout 2s regions 2>/dev/null | awk 'NR > 1 {print $2}')"}
            fi ;;
    esac
}
if (( $+functions[compdef] )); then
    compdef _famctl famctl
fi
`, strings.Join(sortedKeys(regionArgCommands), "|"))
	return b.String()
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func sortedKeys[V any](m map[string]V) []string {
	k := make([]string, 0, len(m))
	for n := range m {
		k = append(k, n)
	}
	sort.Strings(k)
	return k
}
