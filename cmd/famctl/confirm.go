package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// console is where famctl asks for confirmation: a package variable so that
// tests can play the terminal.
var console = struct {
	in    io.Reader
	out   io.Writer   // prompts (never stdout: it may be JSON)
	isTTY func() bool // stdin is a terminal
}{
	in:    os.Stdin,
	out:   os.Stderr,
	isTTY: func() bool { return isTerminal(os.Stdin) },
}

// isTerminal reports whether f is a terminal (it answers the termios ioctl).
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// yesHelp describes --yes.
const yesHelp = "  --yes              do not ask for confirmation (needed when stdin is\n" +
	"                     not a terminal)\n"

// confirm asks the person at the terminal to type "yes" before famctl
// destroys what. With --yes it asks nothing. Without a terminal on stdin it
// refuses (a usage error, exit 2): a script must say --yes rather than
// destroy data because nobody was there to answer.
func confirm(o *cmdOpts, cmd, what string) error {
	if o.yes {
		return nil
	}
	if !console.isTTY() {
		return usagef("%s: refusing to destroy %s without confirmation: stdin is not a terminal; give --yes to go ahead", cmd, what)
	}
	fmt.Fprintf(console.out, "Destroy %s? This cannot be undone. Type 'yes' to go ahead: ", what)
	line, err := bufio.NewReader(console.in).ReadString('\n')
	if err != nil && line == "" {
		return fmt.Errorf("%s: no answer (%v); nothing destroyed", cmd, err)
	}
	if strings.TrimSpace(line) != "yes" {
		return fmt.Errorf("%s: not confirmed (the answer was %q, not \"yes\"); nothing destroyed", cmd, strings.TrimSpace(line))
	}
	return nil
}

// yesFlag registers --yes.
func yesFlag(fs *flag.FlagSet, o *cmdOpts) { fs.BoolVar(&o.yes, "yes", false, "") }

// confirmHelp is the help of a command that asks before destroying.
const confirmHelp = "famctl asks for confirmation on the terminal (type 'yes'); without a\nterminal on stdin it refuses (exit 2) unless --yes is given.\n\nOptions:\n" + yesHelp
