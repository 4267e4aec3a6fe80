package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// pe is one launched processing element.
type pe struct {
	rank int
	cmd  *exec.Cmd
	out  []*lineWriter // --label writers to flush after exit
}

// peExit reports that a PE's process has been waited for.
type peExit struct {
	rank  int
	state *os.ProcessState
}

// runJob starts the PEs, supervises them until all have exited and returns
// famrun's exit status. fd is the private famd set (nil when OPENFAM_SERVER
// was given); the unexpected death of its metadata famd (or only famd)
// stops the job, that of a memory famd is reported and the job goes on.
// Signals arriving on sigs are passed on to the PEs.
func runJob(cfg config, job, server string, fd *privateFamd, sigs <-chan os.Signal, stdout, stderr io.Writer) int {
	var outMu sync.Mutex // keeps labelled lines of different PEs whole
	pes := make([]*pe, 0, cfg.n)
	exits := make(chan peExit, cfg.n)
	for rank := 0; rank < cfg.n; rank++ {
		p, err := startPE(cfg, job, server, rank, stdout, stderr, &outMu)
		if err != nil {
			fmt.Fprintf(stderr, "famrun: cannot start rank %d (%s): %v\n", rank, cfg.progPath, err)
			signalAll(pes, syscall.SIGKILL)
			for range pes {
				<-exits
			}
			if os.IsPermission(err) {
				return exitCannotExec
			}
			return exitNotFound
		}
		pes = append(pes, p)
		go func() {
			// The exit status lives in ProcessState; Wait's error adds
			// nothing famrun reports (a non-zero status or ErrWaitDelay).
			_ = p.cmd.Wait()
			for _, w := range p.out {
				w.flush()
			}
			exits <- peExit{rank: p.rank, state: p.cmd.ProcessState}
		}()
	}

	var timeout <-chan time.Time
	if cfg.timeout > 0 {
		t := time.NewTimer(cfg.timeout)
		defer t.Stop()
		timeout = t.C
	}
	var famdDeaths <-chan *daemon
	if fd != nil {
		famdDeaths = fd.deaths
	}

	status := -1
	stopping, forwarded := false, false
	var kill <-chan time.Time
	stop := func() {
		if stopping {
			return
		}
		stopping = true
		signalAll(pes, syscall.SIGTERM)
		kill = time.After(cfg.grace)
	}
	for running := len(pes); running > 0; {
		select {
		case e := <-exits:
			running--
			code, what := exitStatus(e.state)
			if code != 0 && status < 0 {
				status = code
				if running > 0 {
					fmt.Fprintf(stderr, "famrun: rank %d %s; stopping the job\n", e.rank, what)
				} else {
					fmt.Fprintf(stderr, "famrun: rank %d %s\n", e.rank, what)
				}
				stop()
			}
		case <-timeout:
			if status < 0 {
				status = exitTimeout
				fmt.Fprintf(stderr, "famrun: timeout after %v; stopping the job\n", cfg.timeout)
			}
			stop()
		case <-kill:
			signalAll(pes, syscall.SIGKILL)
		case s := <-sigs:
			if forwarded {
				signalAll(pes, syscall.SIGKILL)
			} else {
				forwarded = true
				signalAll(pes, s.(syscall.Signal))
			}
		case d := <-famdDeaths:
			fmt.Fprintf(stderr, "famrun: %s", fd.deathReport(d))
			if d != fd.daemons[0] {
				// A memory famd: regions with redundancy (RAID1, RAID5)
				// live on without it, and it may be restarted (see
				// FAMRUN_STATE); PEs touching other regions get errors
				// and decide for themselves. Watch the others.
				fmt.Fprintf(stderr, "famrun: the job goes on without it (regions with redundancy survive a memory server)\n")
				continue
			}
			famdDeaths = nil
			if status < 0 {
				status = exitFailure
			}
			stop()
		}
	}
	if stopping {
		// Whatever the PEs left behind in their process groups goes too.
		signalAll(pes, syscall.SIGKILL)
	}
	if status < 0 {
		status = 0
	}
	return status
}

// startPE starts rank's process in a process group of its own.
func startPE(cfg config, job, server string, rank int, stdout, stderr io.Writer, outMu *sync.Mutex) (*pe, error) {
	cmd := &exec.Cmd{
		Path: cfg.progPath,
		Args: cfg.argv,
		Env:  withProvider(peEnv(os.Environ(), job, rank, cfg.n, server, cfg.tokenFile), cfg.provider),
		SysProcAttr: &syscall.SysProcAttr{
			Setpgid: true,
			// A famrun killed outright must not leave the job running.
			Pdeathsig: syscall.SIGKILL,
		},
		// Bounds the wait for output still held open by a PE's leftover
		// children once the PE itself has exited.
		WaitDelay: time.Second,
	}
	if rank == 0 && stdinIsData() {
		cmd.Stdin = os.Stdin
	}
	p := &pe{rank: rank, cmd: cmd}
	if cfg.label {
		prefix := fmt.Sprintf("[%d] ", rank)
		o := &lineWriter{prefix: prefix, out: stdout, mu: outMu}
		e := &lineWriter{prefix: prefix, out: stderr, mu: outMu}
		cmd.Stdout, cmd.Stderr = o, e
		p.out = []*lineWriter{o, e}
	} else {
		cmd.Stdout, cmd.Stderr = stdout, stderr
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return p, nil
}

// stdinIsData reports whether famrun's stdin is a pipe or file (not a
// terminal): a PE in its own process group reading a terminal would be
// stopped with SIGTTIN.
func stdinIsData() bool {
	fi, err := os.Stdin.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice == 0
}

// signalAll sends sig to the process group of every PE. Groups that no
// longer exist are skipped silently: that is the normal end of a PE.
func signalAll(pes []*pe, sig syscall.Signal) {
	for _, p := range pes {
		_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	}
}

// exitStatus turns a wait result into famrun's exit status convention and a
// phrase for messages.
func exitStatus(st *os.ProcessState) (int, string) {
	if st == nil {
		return exitFailure, "could not be waited for"
	}
	ws, ok := st.Sys().(syscall.WaitStatus)
	if ok && ws.Signaled() {
		return 128 + int(ws.Signal()), fmt.Sprintf("was killed by signal %d (%v)", int(ws.Signal()), ws.Signal())
	}
	return st.ExitCode(), fmt.Sprintf("exited with status %d", st.ExitCode())
}

// lineWriter prefixes each line written to it and writes whole lines to out
// under mu, so lines of concurrent PEs do not interleave mid-line. Only the
// exec package's copying goroutine writes to one lineWriter.
type lineWriter struct {
	prefix string
	out    io.Writer
	mu     *sync.Mutex
	buf    []byte
}

// Write buffers p and emits every completed line.
func (w *lineWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	i := bytes.LastIndexByte(w.buf, '\n')
	if i < 0 {
		return len(p), nil
	}
	var out bytes.Buffer
	for _, line := range bytes.SplitAfter(w.buf[:i+1], []byte{'\n'}) {
		if len(line) > 0 {
			out.WriteString(w.prefix)
			out.Write(line)
		}
	}
	w.buf = append(w.buf[:0], w.buf[i+1:]...)
	w.mu.Lock()
	_, err := w.out.Write(out.Bytes())
	w.mu.Unlock()
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

// flush writes a last line that had no newline; called after the PE's
// output has been copied completely.
func (w *lineWriter) flush() {
	if len(w.buf) == 0 {
		return
	}
	w.mu.Lock()
	fmt.Fprintf(w.out, "%s%s\n", w.prefix, w.buf)
	w.mu.Unlock()
	w.buf = nil
}
