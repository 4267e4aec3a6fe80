package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// maxSockPath keeps the socket path (and its ".data" sibling) within the
// 108 bytes of sockaddr_un.sun_path.
const maxSockPath = 100

// famdStopWait is how long famd gets to shut down after SIGTERM before it is
// killed.
const famdStopWait = 10 * time.Second

// privateFamd is the famd famrun starts for one job. Its methods are called
// from famrun's main goroutine only; the log copier and the waiter run in
// goroutines of their own and publish through ready, exited and waitErr.
type privateFamd struct {
	dir     string // temporary directory: socket, data, log
	sock    string
	shm     string // volatile regions; removed with dir
	logPath string
	keep    bool
	cmd     *exec.Cmd
	ready   chan struct{} // closed by the log copier when famd logs "serving"
	exited  chan struct{} // closed when famd has exited; waitErr set
	waitErr error
	logDone chan struct{} // closed when the log copier has finished
}

// findFamd locates the famd binary: $FAMD, then next to famrun, then PATH.
func findFamd() (string, error) {
	if p := os.Getenv("FAMD"); p != "" {
		return p, nil
	}
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), "famd")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	if p, err := exec.LookPath("famd"); err == nil {
		return p, nil
	}
	return "", errors.New("famd not found: set OPENFAM_SERVER to use a running famd, or put famd next to famrun, on PATH, or in $FAMD")
}

// startPrivateFamd creates the job's temporary directory, starts famd in it
// and waits until famd serves on its socket (at most cfg.startup). On error
// nothing is left running and the directory is removed (unless cfg.keep).
// A signal on sigs cancels the start with a signalError.
func startPrivateFamd(cfg config, job string, sigs <-chan os.Signal, stderr io.Writer) (*privateFamd, error) {
	bin, err := findFamd()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "famrun-"+job[:8]+"-")
	if err == nil && len(filepath.Join(dir, "famd.sock.data")) > maxSockPath {
		// A long $TMPDIR cannot hold a socket; /tmp can.
		os.Remove(dir)
		dir, err = os.MkdirTemp("/tmp", "famrun-"+job[:8]+"-")
	}
	if err != nil {
		return nil, fmt.Errorf("temporary directory for famd: %w", err)
	}
	f := &privateFamd{
		dir:     dir,
		sock:    filepath.Join(dir, "famd.sock"),
		shm:     filepath.Join(dir, "shm"),
		logPath: filepath.Join(dir, "famd.log"),
		keep:    cfg.keep,
		ready:   make(chan struct{}),
		exited:  make(chan struct{}),
		logDone: make(chan struct{}),
	}
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() && syscall.Access("/dev/shm", 2) == nil {
		// Volatile regions belong on tmpfs, as with a system famd, but in
		// a directory of the job's own so jobs cannot see each other's.
		f.shm = filepath.Join("/dev/shm", "famrun-"+job)
	}
	if err := f.start(bin, cfg, sigs, stderr); err != nil {
		f.removeFiles(stderr)
		return nil, err
	}
	return f, nil
}

// server is the OPENFAM_SERVER value that points a PE at this famd.
func (f *privateFamd) server() string { return "unix:" + f.sock }

func (f *privateFamd) start(bin string, cfg config, sigs <-chan os.Signal, stderr io.Writer) error {
	logf, err := os.OpenFile(f.logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("famd log: %w", err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		logf.Close()
		return fmt.Errorf("famd log pipe: %w", err)
	}
	data := filepath.Join(f.dir, "data")
	f.cmd = &exec.Cmd{
		Path: bin,
		Args: []string{bin, "--socket", f.sock, "--data-dir", data},
		Env: append(os.Environ(),
			"OPENFAM_DATA_DIR="+data,
			"OPENFAM_SHM_DIR="+f.shm,
			"OPENFAM_BACKUP_DIR="+filepath.Join(f.dir, "backups")),
		Stdout: pw,
		Stderr: pw,
		SysProcAttr: &syscall.SysProcAttr{
			// Out of the terminal's process group: famrun stops famd only
			// after the PEs, so a Ctrl-C must not reach famd first.
			Setpgid:   true,
			Pdeathsig: syscall.SIGTERM,
		},
	}
	err = f.cmd.Start()
	pw.Close()
	if err != nil {
		pr.Close()
		logf.Close()
		return fmt.Errorf("cannot start famd (%s): %w", bin, err)
	}
	go f.copyLog(pr, logf, f.ready, cfg.verbose, stderr)
	go func() {
		f.waitErr = f.cmd.Wait()
		close(f.exited)
	}()

	deadline := time.NewTimer(cfg.startup)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	serving := false
	ready := f.ready
	for {
		select {
		case <-ready:
			serving = true
			ready = nil // a closed channel would spin the loop
		case <-tick.C:
			if serving && f.dialable() {
				return nil
			}
		case <-f.exited:
			<-f.logDone
			return fmt.Errorf("famd (%s) exited before it was ready (%v)\n%s", bin, f.exitErr(), f.logTail())
		case s := <-sigs:
			f.kill()
			return signalError{s.(syscall.Signal)}
		case <-deadline.C:
			f.kill()
			what := "did not log that it is serving"
			if serving {
				what = "did not accept connections on " + f.sock
			}
			return fmt.Errorf("famd (%s) %s within %v\n%s", bin, what, cfg.startup, f.logTail())
		}
	}
}

// dialable reports whether famd's control socket accepts a connection.
func (f *privateFamd) dialable() bool {
	c, err := net.DialTimeout("unix", f.sock, 200*time.Millisecond)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// copyLog copies famd's output into its log file (and famrun's stderr with
// --verbose) and closes ready at the first line that says "serving".
func (f *privateFamd) copyLog(r io.ReadCloser, logf *os.File, ready chan struct{}, verbose bool, stderr io.Writer) {
	defer close(f.logDone)
	defer logf.Close()
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(logf, line)
		if verbose {
			fmt.Fprintf(stderr, "[famd] %s\n", line)
		}
		if ready != nil && strings.Contains(line, "serving") {
			close(ready)
			ready = nil
		}
	}
}

// exitErr describes how famd ended; call only after exited is closed.
func (f *privateFamd) exitErr() string {
	if f.waitErr == nil {
		return "exit status 0"
	}
	return f.waitErr.Error()
}

// logTail returns the last lines famd logged, indented, for error messages.
func (f *privateFamd) logTail() string {
	b, err := os.ReadFile(f.logPath)
	if err != nil || len(bytes.TrimSpace(b)) == 0 {
		return "  (famd logged nothing)\n"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	var sb strings.Builder
	sb.WriteString("  famd log (" + f.logPath + "):\n")
	for _, l := range lines {
		sb.WriteString("  | " + l + "\n")
	}
	return sb.String()
}

// kill ends famd at once (and anything it started) and waits for it.
func (f *privateFamd) kill() {
	_ = syscall.Kill(-f.cmd.Process.Pid, syscall.SIGKILL)
	<-f.exited
	<-f.logDone
}

// stop shuts famd down (SIGTERM, SIGKILL after famdStopWait) and removes
// the job's files unless --keep was given.
func (f *privateFamd) stop(stderr io.Writer) {
	select {
	case <-f.exited:
		// Already reported by the job loop when it happened.
	default:
		_ = f.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-f.exited:
			if f.waitErr != nil {
				<-f.logDone
				fmt.Fprintf(stderr, "famrun: famd did not shut down cleanly (%v)\n%s", f.waitErr, f.logTail())
			}
		case <-time.After(famdStopWait):
			fmt.Fprintf(stderr, "famrun: famd did not stop within %v of SIGTERM; killing it\n", famdStopWait)
			f.kill()
		}
	}
	// Children famd may have left in its group go with it.
	_ = syscall.Kill(-f.cmd.Process.Pid, syscall.SIGKILL)
	<-f.logDone
	f.removeFiles(stderr)
}

// removeFiles deletes the temporary directory and shm directory, or says
// where they are with --keep.
func (f *privateFamd) removeFiles(stderr io.Writer) {
	if f.keep {
		fmt.Fprintf(stderr, "famrun: kept %s (famd log: %s, volatile regions: %s)\n", f.dir, f.logPath, f.shm)
		return
	}
	var errs []error
	for _, p := range []string{f.shm, f.dir} {
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintf(stderr, "famrun: cleaning up: %v\n", err)
	}
}
