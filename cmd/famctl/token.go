package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// tokenBytes is the number of random bytes in a token famctl makes: 256
// bits, written as 64 hexadecimal digits.
const tokenBytes = 32

// tokenCommand is "famctl token new FILE".
var tokenCommand = &command{name: "token", args: "new FILE", summary: "write a new random token to FILE (for famd --token-file or --server-token-file)",
	min: 2, max: 2, local: cmdTokenNew,
	flags: func(fs *flag.FlagSet, o *cmdOpts) { fs.BoolVar(&o.force, "force", false, "") },
	help: "Writes 32 random bytes (crypto/rand) as 64 hexadecimal digits and a\n" +
		"newline to FILE, mode 0600, owned by the user running famctl. A token\n" +
		"file is one line; famd and clients strip surrounding white space and\n" +
		"refuse a file its group or others may read or write. Give the cluster\n" +
		"token to famd (--token-file) and to every client host\n" +
		"(OPENFAM_TOKEN_FILE); make a second token for --server-token-file.\n" +
		"No famd is contacted.\n\n" +
		"Options:\n  --force            replace FILE if it exists (famd and every client\n" +
		"                     holding the old token must then get the new one)\n"}

// cmdTokenNew writes a new token to args[1]. Without --force an existing
// file is left untouched: overwriting a cluster token by mistake locks
// every client out.
func cmdTokenNew(g *globals, o *cmdOpts, args []string, stdout io.Writer) error {
	if args[0] != "new" {
		return usagef("token: unknown subcommand %q (want: token new FILE)", args[0])
	}
	path := args[1]
	b := make([]byte, tokenBytes)
	if _, err := rand.Read(b); err != nil {
		return fmt.Errorf("token: %v", err)
	}
	content := []byte(hex.EncodeToString(b) + "\n")
	if o.force {
		if err := replaceFile(path, content); err != nil {
			return fmt.Errorf("token: %v", err)
		}
	} else {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("token: %s exists: give --force to replace it (famd and every client holding the old token then need the new one)", path)
		}
		if err != nil {
			return fmt.Errorf("token: %v", err)
		}
		// The umask cannot widen 0600, but a narrower one (0277) would
		// leave the owner unable to read the token.
		err = f.Chmod(0o600)
		if _, werr := f.Write(content); err == nil {
			err = werr
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(path)
			return fmt.Errorf("token: writing %s: %v", path, err)
		}
	}
	if g.json {
		return (&session{stdout: stdout}).emit(map[string]any{"file": path, "mode": "0600", "bytes": tokenBytes})
	}
	fmt.Fprintf(stdout, "wrote a new token to %s (mode 0600)\n", path)
	return nil
}

// replaceFile writes content to path through a new 0600 file renamed over
// it, so that path never holds a partial token nor, for a moment, the
// old file's wider mode.
func replaceFile(path string, content []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".new*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	err = tmp.Chmod(0o600)
	if _, werr := tmp.Write(content); err == nil {
		err = werr
	}
	if serr := tmp.Sync(); err == nil {
		err = serr
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
