package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Binaries built once by TestMain. famdBin and famctlBin stay empty (and
// famdBuildErr says why) when cmd/famd or cmd/famctl do not build.
var (
	famrunBin    string
	famdBin      string
	famctlBin    string
	famdBuildErr error
)

func TestMain(m *testing.M) {
	if mode := os.Getenv("FAMRUN_FAKE_FAMD"); mode != "" {
		fakeFamd(mode)
		return
	}
	dir, err := os.MkdirTemp("", "famrun-test-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	famrunBin = filepath.Join(dir, "famrun")
	// The race detector also watches famrun's own goroutines where it can.
	if out, err := exec.Command("go", "build", "-race", "-o", famrunBin, ".").CombinedOutput(); err != nil {
		if out2, err2 := exec.Command("go", "build", "-o", famrunBin, ".").CombinedOutput(); err2 != nil {
			fmt.Fprintf(os.Stderr, "building famrun: %v\n%s%s", err2, out, out2)
			os.Exit(1)
		}
	}
	// famd is built into a directory of its own so that only the tests that
	// ask for it (through $FAMD) use it.
	famdDir := filepath.Join(dir, "famd-dir")
	os.Mkdir(famdDir, 0o755)
	if out, err := exec.Command("go", "build", "-o", filepath.Join(famdDir, "famd"), "../famd").CombinedOutput(); err != nil {
		famdBuildErr = fmt.Errorf("%v\n%s", err, out)
	} else {
		famdBin = filepath.Join(famdDir, "famd")
		if _, err := exec.Command("go", "build", "-o", filepath.Join(dir, "famctl"), "../famctl").CombinedOutput(); err == nil {
			famctlBin = filepath.Join(dir, "famctl")
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// famrunResult is what one famrun run did.
type famrunResult struct {
	code    int
	stdout  string
	stderr  string
	elapsed time.Duration
}

// runFamrun runs famrun with env added to the test's environment (minus
// OPENFAM_SERVER and FAMD unless env sets them) and stdin from stdin (nil:
// /dev/null). It fails the test if famrun runs longer than a minute.
func runFamrun(t *testing.T, env []string, stdin []byte, args ...string) famrunResult {
	t.Helper()
	cmd := exec.Command(famrunBin, args...)
	cmd.Env = append(cleanEnv(), env...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		<-done
		t.Fatalf("famrun %v hung; stderr:\n%s", args, se.String())
	}
	return famrunResult{code: cmd.ProcessState.ExitCode(), stdout: so.String(), stderr: se.String(), elapsed: time.Since(start)}
}

// cleanEnv is the test's environment without the variables famrun reads or
// sets, so the caller's shell cannot change what a test sees.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "OPENFAM_SERVER", "OPENFAM_PROVIDER", "FAMD", "FAMRUN_FAKE_FAMD", "GORACE":
			continue
		}
		env = append(env, kv)
	}
	// A race-enabled famrun otherwise sleeps a second at exit; a race it
	// finds still fails the test through exit status 66.
	return append(env, "GORACE=atexit_sleep_ms=0")
}

// noFamd points famrun at a server so that it starts no famd of its own.
const noFamd = "OPENFAM_SERVER=unix:/nonexistent/famd.sock"

// processGone reports whether pid has exited (a zombie counts as exited:
// it runs no code and holds no resources but its pid).
func processGone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the parenthesised command name.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && len(s) > i+2 && (s[i+2] == 'Z' || s[i+2] == 'X')
}

// waitGone waits up to 60 s (a deadline for a loaded machine) for pid to exit.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if processGone(pid) {
			return
		}
	}
	syscall.Kill(pid, syscall.SIGKILL)
	t.Errorf("process %d still runs after famrun exited", pid)
}

// readPid reads a pid a PE wrote to path.
func readPid(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("PE did not record its pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("bad pid in %s: %q", path, b)
	}
	return pid
}

// waitFile waits up to 60 s for path to exist.
func waitFile(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
	t.Fatalf("%s did not appear", path)
}

func TestRanksAndEnvironment(t *testing.T) {
	for _, n := range []int{1, 3, 4} {
		t.Run(fmt.Sprint("n", n), func(t *testing.T) {
			dir := t.TempDir()
			script := `echo "$FAMRUN_RANK $FAMRUN_SIZE $PMI_RANK $PMI_SIZE $FAMRUN_JOB $OPENFAM_SERVER $FAMRUN_TEST_MARK" > "$OUT/rank.$FAMRUN_RANK"`
			// Stale launcher variables in famrun's environment must be
			// replaced, not passed on.
			r := runFamrun(t, []string{noFamd, "OUT=" + dir, "FAMRUN_TEST_MARK=mark", "FAMRUN_RANK=99", "PMI_SIZE=99", "FAMRUN_JOB=stale"},
				nil, "-n", fmt.Sprint(n), "--", "sh", "-c", script)
			if r.code != 0 {
				t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
			}
			job := ""
			for rank := 0; rank < n; rank++ {
				b, err := os.ReadFile(filepath.Join(dir, fmt.Sprint("rank.", rank)))
				if err != nil {
					t.Fatalf("rank %d did not run: %v", rank, err)
				}
				f := strings.Fields(string(b))
				want := []string{fmt.Sprint(rank), fmt.Sprint(n), fmt.Sprint(rank), fmt.Sprint(n)}
				if len(f) != 7 || strings.Join(f[:4], " ") != strings.Join(want, " ") {
					t.Fatalf("rank %d saw %q, want rank/size %v", rank, b, want)
				}
				if !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(f[4]) {
					t.Errorf("FAMRUN_JOB %q is not 16 hex digits", f[4])
				}
				if job == "" {
					job = f[4]
				} else if f[4] != job {
					t.Errorf("rank %d has job %s, rank 0 has %s", rank, f[4], job)
				}
				if f[5] != "unix:/nonexistent/famd.sock" || f[6] != "mark" {
					t.Errorf("rank %d: OPENFAM_SERVER %q, inherited variable %q", rank, f[5], f[6])
				}
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != n {
				t.Errorf("%d PEs ran, want %d", len(entries), n)
			}
		})
	}
}

func TestJobIDsDiffer(t *testing.T) {
	dir := t.TempDir()
	for i := 0; i < 2; i++ {
		r := runFamrun(t, []string{noFamd, "OUT=" + filepath.Join(dir, fmt.Sprint(i))}, nil,
			"-n", "1", "sh", "-c", `echo $FAMRUN_JOB > "$OUT"`)
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
	}
	a, _ := os.ReadFile(filepath.Join(dir, "0"))
	b, _ := os.ReadFile(filepath.Join(dir, "1"))
	if len(a) == 0 || bytes.Equal(a, b) {
		t.Errorf("two jobs got job ids %q and %q", a, b)
	}
}

func TestFirstFailureStopsJob(t *testing.T) {
	dir := t.TempDir()
	// Rank 1 fails once the others run; rank 0 is the PE itself, rank 2
	// started a child of its own (which must die with it).
	script := `case $FAMRUN_RANK in
	1) while [ ! -e "$OUT/pid.0" ] || [ ! -e "$OUT/pid.2" ]; do sleep 0.01; done; exit 3;;
	0) echo $$ > "$OUT/pid.0.tmp"; mv "$OUT/pid.0.tmp" "$OUT/pid.0"; exec sleep 100;;
	2) sleep 100 & echo $! > "$OUT/pid.2.tmp"; mv "$OUT/pid.2.tmp" "$OUT/pid.2"; wait;;
	esac`
	r := runFamrun(t, []string{noFamd, "OUT=" + dir}, nil, "-n", "3", "--grace", "2s", "--", "sh", "-c", script)
	if r.code != 3 {
		t.Fatalf("exit %d, want 3; stderr:\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "rank 1 exited with status 3") {
		t.Errorf("stderr does not name the failing rank:\n%s", r.stderr)
	}
	if r.elapsed > 10*time.Second {
		t.Errorf("famrun took %v to stop the job", r.elapsed)
	}
	waitGone(t, readPid(t, filepath.Join(dir, "pid.0")))
	waitGone(t, readPid(t, filepath.Join(dir, "pid.2")))
}

func TestSignalDeath(t *testing.T) {
	dir := t.TempDir()
	script := `if [ $FAMRUN_RANK = 0 ]; then while [ ! -e "$OUT/pid" ]; do sleep 0.01; done; kill -KILL $$; fi
	echo $$ > "$OUT/pid.tmp"; mv "$OUT/pid.tmp" "$OUT/pid"; exec sleep 100`
	r := runFamrun(t, []string{noFamd, "OUT=" + dir}, nil, "-n", "2", "--", "sh", "-c", script)
	if r.code != 128+int(syscall.SIGKILL) {
		t.Fatalf("exit %d, want %d; stderr:\n%s", r.code, 128+int(syscall.SIGKILL), r.stderr)
	}
	if !strings.Contains(r.stderr, "rank 0 was killed by signal 9") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
	waitGone(t, readPid(t, filepath.Join(dir, "pid")))
}

func TestTimeout(t *testing.T) {
	dir := t.TempDir()
	// Rank 1 ignores SIGTERM, so only the SIGKILL after the grace time
	// ends it.
	script := `[ $FAMRUN_RANK = 1 ] && trap '' TERM
	echo $$ > "$OUT/pid.$FAMRUN_RANK"; exec sleep 100`
	r := runFamrun(t, []string{noFamd, "OUT=" + dir}, nil, "-n", "2", "--timeout", "700ms", "--grace", "300ms", "--", "sh", "-c", script)
	if r.code != 124 {
		t.Fatalf("exit %d, want 124; stderr:\n%s", r.code, r.stderr)
	}
	if r.elapsed < 700*time.Millisecond || r.elapsed > 8*time.Second {
		t.Errorf("famrun ran %v with --timeout 700ms --grace 300ms", r.elapsed)
	}
	if !strings.Contains(r.stderr, "timeout") {
		t.Errorf("stderr does not mention the timeout:\n%s", r.stderr)
	}
	for rank := 0; rank < 2; rank++ {
		waitGone(t, readPid(t, filepath.Join(dir, fmt.Sprint("pid.", rank))))
	}
}

func TestAllSucceed(t *testing.T) {
	r := runFamrun(t, []string{noFamd}, nil, "-n", "4", "--timeout", "30s", "--", "sh", "-c", "sleep 0.$FAMRUN_RANK")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestSignalsAreForwarded(t *testing.T) {
	dir := t.TempDir()
	script := `trap 'echo $FAMRUN_RANK > "$OUT/term.$FAMRUN_RANK"; exit 5' TERM
	touch "$OUT/up.$FAMRUN_RANK"
	while :; do sleep 0.05; done`
	cmd := exec.Command(famrunBin, "-n", "2", "--", "sh", "-c", script)
	cmd.Env = append(cleanEnv(), noFamd, "OUT="+dir)
	var se bytes.Buffer
	cmd.Stderr = &se
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFile(t, filepath.Join(dir, "up.0"))
	waitFile(t, filepath.Join(dir, "up.1"))
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatal("famrun did not end within 60s of SIGTERM")
	}
	if c := cmd.ProcessState.ExitCode(); c != 5 {
		t.Errorf("exit %d, want the PEs' 5; stderr:\n%s", c, se.String())
	}
	for rank := 0; rank < 2; rank++ {
		if _, err := os.Stat(filepath.Join(dir, fmt.Sprint("term.", rank))); err != nil {
			t.Errorf("rank %d did not get SIGTERM", rank)
		}
	}
}

func TestServersWithOpenfamServerRefused(t *testing.T) {
	dir := t.TempDir()
	r := runFamrun(t, []string{"OUT=" + dir, noFamd}, nil, "-n", "2", "--servers", "2", "--", "sh", "-c", `touch "$OUT/ran"`)
	if r.code != 2 || !strings.Contains(r.stderr, "OPENFAM_SERVER") {
		t.Errorf("exit %d, stderr:\n%s\nwant exit 2 explaining that OPENFAM_SERVER and --servers exclude each other", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("a PE ran although the job was refused")
	}
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"true"}, 2, "-n N"},
		{[]string{"-n", "0", "true"}, 2, "-n N"},
		{[]string{"-n", "2"}, 2, "no PROGRAM"},
		{[]string{"-n", "2", "--bogus", "true"}, 2, "bogus"},
		{[]string{"-n", "2", "--timeout", "soon", "true"}, 2, "timeout"},
		{[]string{"-n", "2", "--servers", "0", "true"}, 2, "--servers"},
		{[]string{"-n", "1", "/nonexistent/prog"}, 127, "/nonexistent/prog"},
		{[]string{"-n", "1", "famrun-no-such-program"}, 127, "famrun-no-such-program"},
	} {
		r := runFamrun(t, []string{noFamd}, nil, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.msg) {
			t.Errorf("famrun %v: exit %d, stderr %q; want exit %d mentioning %q", tc.args, r.code, r.stderr, tc.code, tc.msg)
		}
	}
}

func TestHelp(t *testing.T) {
	r := runFamrun(t, nil, nil, "--help")
	if r.code != 0 {
		t.Fatalf("exit %d", r.code)
	}
	for _, s := range []string{"-n N", "--servers", "--timeout", "--keep", "--label", "FAMRUN_JOB", "FAMRUN_RANK",
		"FAMRUN_SIZE", "PMI_RANK", "PMI_SIZE", "OPENFAM_SERVER", "OPENFAM_TOKEN_FILE", "FAMD", "124", "--role metadata",
		"--role memory"} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("--help does not mention %s", s)
		}
	}
}

func TestLabelAndStdin(t *testing.T) {
	r := runFamrun(t, []string{noFamd}, []byte("from stdin\n"), "-n", "2", "--label", "--", "sh", "-c",
		`read line || line=none; echo "got $line"; printf partial >&2`)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	out := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(out) != 2 || !contains(out, "[0] got from stdin") || !contains(out, "[1] got none") {
		t.Errorf("stdout %q: want rank 0 to read stdin and rank 1 /dev/null, each line labelled", r.stdout)
	}
	errs := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if len(errs) != 2 || !contains(errs, "[0] partial") || !contains(errs, "[1] partial") {
		t.Errorf("stderr %q: want unterminated lines labelled and ended", r.stderr)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// fakeFamd is famd's stand-in, run by re-executing the test binary with
// FAMRUN_FAKE_FAMD set: it records how it was started in $FAKE_FAMD_RECORD
// and then behaves as mode says:
//
//	serve   listen on --socket, log "serving", exit 0 on SIGTERM
//	die     log a message and exit 7 at once
//	silent  never say it serves
//	crash   serve, then exit 9 after 300 ms
func fakeFamd(mode string) {
	var sock, data, provider string
	for i := 1; i+1 < len(os.Args); i++ {
		switch os.Args[i] {
		case "--provider":
			provider = os.Args[i+1]
		case "--socket":
			sock = os.Args[i+1]
		case "--data-dir":
			data = os.Args[i+1]
		}
	}
	rec := os.Getenv("FAKE_FAMD_RECORD")
	note := func(s string) {
		f, err := os.OpenFile(rec, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err == nil {
			fmt.Fprintln(f, s)
			f.Close()
		}
	}
	note(fmt.Sprintf("pid %d", os.Getpid()))
	note("socket " + sock)
	note("data " + data)
	if provider != "" {
		note("provider " + provider)
	}
	note("shm " + os.Getenv("OPENFAM_SHM_DIR"))
	// Like famd, make the directories so that their removal can be checked.
	os.MkdirAll(data, 0o700)
	os.MkdirAll(os.Getenv("OPENFAM_SHM_DIR"), 0o700)
	terms := make(chan os.Signal, 1)
	signal.Notify(terms, syscall.SIGTERM)
	switch mode {
	case "die":
		fmt.Fprintln(os.Stderr, "famd: boom: cannot open data dir")
		os.Exit(7)
	case "silent":
		fmt.Println("famd: starting")
		<-terms
		os.Exit(0)
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	fmt.Fprintf(os.Stderr, "famd: serving control on %s\n", sock)
	if mode == "crash" {
		time.Sleep(300 * time.Millisecond)
		os.Exit(9)
	}
	<-terms
	note("sigterm")
	l.Close()
	os.Exit(0)
}

// fakeRecord parses the fake famd's record into key -> value.
func fakeRecord(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("fake famd left no record: %v", err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		k, v, _ := strings.Cut(line, " ")
		m[k] = v
	}
	return m
}

// fakeEnv is the environment that makes famrun start fakeFamd in mode, with
// its temporary directory under tmp.
func fakeEnv(mode, tmp, record string) []string {
	return []string{"FAMD=" + os.Args[0], "FAMRUN_FAKE_FAMD=" + mode, "FAKE_FAMD_RECORD=" + record, "TMPDIR=" + tmp}
}

// emptyDir fails the test unless dir has no entries: famrun cleaned up.
func emptyDir(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("famrun left %s behind", filepath.Join(dir, e.Name()))
	}
}

func TestPrivateFamdLifecycle(t *testing.T) {
	tmp, out := t.TempDir(), t.TempDir()
	rec := filepath.Join(out, "record")
	script := `echo "$OPENFAM_SERVER" > "$OUT/server.$FAMRUN_RANK"; test -S "${OPENFAM_SERVER#unix:}"`
	r := runFamrun(t, append(fakeEnv("serve", tmp, rec), "OUT="+out), nil, "-n", "2", "--", "sh", "-c", script)
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	m := fakeRecord(t, rec)
	server, _ := os.ReadFile(filepath.Join(out, "server.1"))
	if got := strings.TrimSpace(string(server)); got != "unix:"+m["socket"] {
		t.Errorf("PE got OPENFAM_SERVER %q, famd serves on %q", got, m["socket"])
	}
	if !strings.HasPrefix(m["socket"], tmp+"/famrun-") || m["data"] != filepath.Join(filepath.Dir(m["socket"]), "data") {
		t.Errorf("famd started with --socket %q --data-dir %q, want both in a directory under %s", m["socket"], m["data"], tmp)
	}
	if _, ok := m["sigterm"]; !ok {
		t.Error("famd did not get SIGTERM at the end of the job")
	}
	pid, _ := strconv.Atoi(m["pid"])
	waitGone(t, pid)
	emptyDir(t, tmp)
	if _, err := os.Stat(m["shm"]); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("volatile region directory %s left behind", m["shm"])
	}
}

func TestPrivateFamdKeep(t *testing.T) {
	tmp, out := t.TempDir(), t.TempDir()
	rec := filepath.Join(out, "record")
	r := runFamrun(t, fakeEnv("serve", tmp, rec), nil, "-n", "1", "--keep", "true")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	m := fakeRecord(t, rec)
	dir := filepath.Dir(m["socket"])
	defer os.RemoveAll(m["shm"])
	if !strings.Contains(r.stderr, "kept "+dir) {
		t.Errorf("famrun does not say where it kept the job's files:\n%s", r.stderr)
	}
	log, err := os.ReadFile(filepath.Join(dir, "famd.log"))
	if err != nil || !strings.Contains(string(log), "serving control on") {
		t.Errorf("famd.log: %q, %v", log, err)
	}
}

func TestPrivateFamdFailsToStart(t *testing.T) {
	t.Run("exits", func(t *testing.T) {
		tmp, out := t.TempDir(), t.TempDir()
		r := runFamrun(t, append(fakeEnv("die", tmp, filepath.Join(out, "record")), "OUT="+out), nil,
			"-n", "1", "sh", "-c", `touch "$OUT/ran"`)
		if r.code != 1 || !strings.Contains(r.stderr, "exited before it was ready") || !strings.Contains(r.stderr, "boom") {
			t.Errorf("exit %d, stderr:\n%s\nwant exit 1 with famd's last words", r.code, r.stderr)
		}
		if _, err := os.Stat(filepath.Join(out, "ran")); err == nil {
			t.Error("a PE ran without a famd")
		}
		emptyDir(t, tmp)
	})
	t.Run("silent", func(t *testing.T) {
		tmp, out := t.TempDir(), t.TempDir()
		rec := filepath.Join(out, "record")
		// The limit leaves the fake famd (a race-enabled test binary) time
		// to log its first line on a loaded machine: famrun must show it.
		r := runFamrun(t, fakeEnv("silent", tmp, rec), nil, "-n", "1", "--startup", "5s", "true")
		if r.code != 1 || !strings.Contains(r.stderr, "within 5s") || !strings.Contains(r.stderr, "famd: starting") {
			t.Errorf("exit %d, stderr:\n%s\nwant exit 1 naming the startup limit", r.code, r.stderr)
		}
		pid, _ := strconv.Atoi(fakeRecord(t, rec)["pid"])
		waitGone(t, pid)
		emptyDir(t, tmp)
	})
	t.Run("interrupted", func(t *testing.T) {
		tmp, out := t.TempDir(), t.TempDir()
		rec := filepath.Join(out, "record")
		cmd := exec.Command(famrunBin, "-n", "1", "--startup", "50s", "--", "sh", "-c", `touch "$OUT/ran"`)
		cmd.Env = append(append(cleanEnv(), fakeEnv("silent", tmp, rec)...), "OUT="+out)
		var se bytes.Buffer
		cmd.Stderr = &se
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// The record's last line is written just before famd says anything.
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if b, _ := os.ReadFile(rec); strings.Contains(string(b), "shm ") {
				break
			}
		}
		start := time.Now()
		cmd.Process.Signal(syscall.SIGINT)
		err := cmd.Wait()
		if code := cmd.ProcessState.ExitCode(); code != 128+int(syscall.SIGINT) || time.Since(start) > 5*time.Second {
			t.Errorf("exit %d (%v) after %v; stderr:\n%s", code, err, time.Since(start), se.String())
		}
		if _, err := os.Stat(filepath.Join(out, "ran")); err == nil {
			t.Error("a PE ran although famrun was interrupted before the job")
		}
		pid, _ := strconv.Atoi(fakeRecord(t, rec)["pid"])
		waitGone(t, pid)
		emptyDir(t, tmp)
	})
	t.Run("not found", func(t *testing.T) {
		r := runFamrun(t, []string{"FAMD=/nonexistent/famd", "TMPDIR=" + t.TempDir()}, nil, "-n", "1", "true")
		if r.code != 1 || !strings.Contains(r.stderr, "/nonexistent/famd") {
			t.Errorf("exit %d, stderr:\n%s", r.code, r.stderr)
		}
	})
}

func TestPrivateFamdDiesDuringJob(t *testing.T) {
	tmp, out := t.TempDir(), t.TempDir()
	rec := filepath.Join(out, "record")
	r := runFamrun(t, append(fakeEnv("crash", tmp, rec), "OUT="+out), nil, "-n", "2", "--grace", "1s", "--",
		"sh", "-c", `echo $$ > "$OUT/pid.$FAMRUN_RANK"; exec sleep 100`)
	if r.code != 1 || !strings.Contains(r.stderr, "famd exited while the job was running") {
		t.Errorf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if r.elapsed > 15*time.Second {
		t.Errorf("famrun took %v to stop a job whose famd died", r.elapsed)
	}
	for rank := 0; rank < 2; rank++ {
		waitGone(t, readPid(t, filepath.Join(out, fmt.Sprint("pid.", rank))))
	}
	emptyDir(t, tmp)
}

// TestRealFamd runs a job on the real famd: the PEs reach it through
// OPENFAM_SERVER and famrun stops it and removes its directory afterwards.
func TestRealFamd(t *testing.T) {
	if famdBin == "" {
		t.Skipf("cmd/famd does not build yet: %v", famdBuildErr)
	}
	tmp, out := t.TempDir(), t.TempDir()
	pe := []string{"sh", "-c", `echo "$OPENFAM_SERVER" > "$OUT/server.$FAMRUN_RANK"; test -S "${OPENFAM_SERVER#unix:}"`}
	if famctlBin != "" {
		pe = []string{"sh", "-c", `echo "$OPENFAM_SERVER" > "$OUT/server.$FAMRUN_RANK" && "$FAMCTL" --json servers > "$OUT/info.$FAMRUN_RANK"`}
	}
	r := runFamrun(t, []string{"FAMD=" + famdBin, "TMPDIR=" + tmp, "OUT=" + out, "FAMCTL=" + famctlBin}, nil,
		append([]string{"-n", "3", "--timeout", "50s", "--"}, pe...)...)
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	server, _ := os.ReadFile(filepath.Join(out, "server.2"))
	sock := strings.TrimPrefix(strings.TrimSpace(string(server)), "unix:")
	if !strings.HasPrefix(sock, tmp+"/famrun-") {
		t.Errorf("PE got OPENFAM_SERVER %q, want a socket under %s", server, tmp)
	}
	if famctlBin != "" {
		info, _ := os.ReadFile(filepath.Join(out, "info.0"))
		if !strings.Contains(string(info), filepath.Dir(sock)) {
			t.Errorf("famctl servers in a PE did not report the private famd's data dir:\n%s", info)
		}
	}
	emptyDir(t, tmp)
	// No famd serving that directory may be left.
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, _ := os.ReadFile(p)
		if bytes.Contains(b, []byte(filepath.Dir(sock))) {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			if !processGone(pid) {
				t.Errorf("famd (pid %d) still runs: %q", pid, b)
			}
		}
	}
}

// leftover fails the test if a process whose command line mentions dir
// still runs.
func leftover(t *testing.T, dir string) {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, _ := os.ReadFile(p)
		if bytes.Contains(b, []byte(dir)) {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			if pid != os.Getpid() && !processGone(pid) {
				t.Errorf("process %d still runs: %q", pid, b)
			}
		}
	}
}

// TestRealFamdServers runs a job on a real metadata famd with two memory
// famds: the PEs get the job's socket and token, both memory servers have
// joined before the PEs start, and everything is gone afterwards.
func TestRealFamdServers(t *testing.T) {
	if famdBin == "" || famctlBin == "" {
		t.Skipf("cmd/famd or cmd/famctl does not build yet: %v", famdBuildErr)
	}
	tmp, out := t.TempDir(), t.TempDir()
	pe := `echo "$OPENFAM_SERVER $OPENFAM_TOKEN_FILE" > "$OUT/env.$FAMRUN_RANK" &&
stat -c %a "$OPENFAM_TOKEN_FILE" > "$OUT/mode.$FAMRUN_RANK" &&
{ test -e "$(dirname "$OPENFAM_TOKEN_FILE")/server-token" && echo present || echo gone; } > "$OUT/stok.$FAMRUN_RANK" &&
{ env | grep -c -i server-token || true; } > "$OUT/senv.$FAMRUN_RANK" &&
"$FAMCTL" --json servers > "$OUT/servers.$FAMRUN_RANK"`
	r := runFamrun(t, []string{"FAMD=" + famdBin, "TMPDIR=" + tmp, "OUT=" + out, "FAMCTL=" + famctlBin,
		"OPENFAM_TOKEN_FILE=/inherited/token"}, nil, "-n", "2", "--servers", "2", "--timeout", "50s", "--", "sh", "-c", pe)
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	env, _ := os.ReadFile(filepath.Join(out, "env.1"))
	f := strings.Fields(string(env))
	if len(f) != 2 || !strings.HasPrefix(f[0], "unix:"+tmp+"/famrun-") || f[1] != filepath.Join(filepath.Dir(strings.TrimPrefix(f[0], "unix:")), "token") {
		t.Errorf("PE got OPENFAM_SERVER and OPENFAM_TOKEN_FILE %q, want the job's socket and token under %s", env, tmp)
	}
	if mode, _ := os.ReadFile(filepath.Join(out, "mode.0")); strings.TrimSpace(string(mode)) != "600" {
		t.Errorf("the job's token file has mode %q, want 600", mode)
	}
	// The memory famds' credential is gone before the PEs start, and no
	// PE is told of it: a PE must not join as a memory server by mistake.
	if st, _ := os.ReadFile(filepath.Join(out, "stok.0")); strings.TrimSpace(string(st)) != "gone" {
		t.Errorf("the job's server token file is %q while the PEs run, want gone", st)
	}
	if n, _ := os.ReadFile(filepath.Join(out, "senv.0")); strings.TrimSpace(string(n)) != "0" {
		t.Errorf("%s environment variables of a PE mention the server token", n)
	}
	var servers struct {
		MemoryServers []struct {
			ID        uint64
			DataUnix  string `json:"data_unix"`
			Reachable bool
		} `json:"memory_servers"`
	}
	b, _ := os.ReadFile(filepath.Join(out, "servers.0"))
	if err := json.Unmarshal(b, &servers); err != nil {
		t.Fatalf("famctl servers in a PE: %v\n%s", err, b)
	}
	if len(servers.MemoryServers) != 2 {
		t.Fatalf("the PE saw %d memory servers, want 2:\n%s", len(servers.MemoryServers), b)
	}
	for _, m := range servers.MemoryServers {
		if !m.Reachable || !strings.HasPrefix(m.DataUnix, tmp+"/famrun-") {
			t.Errorf("memory server %+v: want reachable, with a data socket in the job directory", m)
		}
	}
	emptyDir(t, tmp)
	leftover(t, tmp)
}

// TestServersDoNotJoin: memory famds that cannot join make famrun give up
// after --startup with the reason, run no PE and leave nothing behind.
func TestServersDoNotJoin(t *testing.T) {
	if famdBin == "" {
		t.Skipf("cmd/famd does not build yet: %v", famdBuildErr)
	}
	tmp, out := t.TempDir(), t.TempDir()
	// The wrapper points every memory famd at a metadata famd that is not
	// there, so they keep retrying.
	wrapper := filepath.Join(out, "famd")
	script := "#!/bin/sh\ncase \" $* \" in *\" --role memory \"*) exec \"$REAL_FAMD\" \"$@\" --join unix:/nonexistent/famd.sock;; esac\nexec \"$REAL_FAMD\" \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	r := runFamrun(t, []string{"FAMD=" + wrapper, "REAL_FAMD=" + famdBin, "TMPDIR=" + tmp, "OUT=" + out}, nil,
		"-n", "1", "--servers", "2", "--startup", "1500ms", "--", "sh", "-c", `touch "$OUT/ran"`)
	if r.code != 1 || !strings.Contains(r.stderr, "did not all join") || !strings.Contains(r.stderr, "within 1.5s") ||
		!strings.Contains(r.stderr, "memory famd 2 did not join") {
		t.Errorf("exit %d, stderr:\n%s\nwant exit 1 naming the memory famds that did not join", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(out, "ran")); err == nil {
		t.Error("a PE ran although the memory servers never joined")
	}
	emptyDir(t, tmp)
	leftover(t, tmp)
}

// TestMemoryFamdDiesDuringJob: a memory famd killed while the PEs run is
// reported by name, and the job goes on (regions with redundancy survive
// a memory server, issue 16): the PEs finish and famrun exits 0.
func TestMemoryFamdDiesDuringJob(t *testing.T) {
	if famdBin == "" {
		t.Skipf("cmd/famd does not build yet: %v", famdBuildErr)
	}
	tmp, out := t.TempDir(), t.TempDir()
	pe := `echo $$ > "$OUT/pid.$FAMRUN_RANK"
log="$(dirname "${OPENFAM_SERVER#unix:}")/famd-mem2.log"
if [ "$FAMRUN_RANK" = 0 ]; then
  mem=$(sed -n 's/.*; pid \([0-9]*\);.*/\1/p' "$log" | head -n 1)
  kill -9 "$mem"
  i=0; while kill -0 "$mem" 2>/dev/null; do i=$((i+1)); [ $i -lt 1200 ] || exit 3; sleep 0.05; done
  touch "$OUT/killed"
fi
i=0; until [ -e "$OUT/killed" ]; do i=$((i+1)); [ $i -lt 1200 ] || exit 4; sleep 0.05; done
echo "rank $FAMRUN_RANK done"`
	r := runFamrun(t, []string{"FAMD=" + famdBin, "TMPDIR=" + tmp, "OUT=" + out}, nil,
		"-n", "2", "--servers", "2", "--grace", "1s", "--", "sh", "-c", pe)
	if r.code != 0 || !strings.Contains(r.stderr, "memory famd 2 exited while the job was running") ||
		!strings.Contains(r.stderr, "the job goes on") || strings.Count(r.stdout, "done") != 2 {
		t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s\nwant exit 0 after both PEs finished, naming memory famd 2", r.code, r.stdout, r.stderr)
	}
	for rank := 0; rank < 2; rank++ {
		waitGone(t, readPid(t, filepath.Join(out, fmt.Sprint("pid.", rank))))
	}
	emptyDir(t, tmp)
	leftover(t, tmp)
}

// TestStateFileRestartsMemoryFamd: with FAMRUN_STATE famrun describes the
// set; a PE kills memory famd 1 with SIGKILL and starts it again with the
// file's restart command, and it rejoins with the same server id
// (famctl servers shows it reachable).
func TestStateFileRestartsMemoryFamd(t *testing.T) {
	if famdBin == "" || famctlBin == "" {
		t.Skipf("cmd/famd or cmd/famctl does not build yet: %v", famdBuildErr)
	}
	tmp, out := t.TempDir(), t.TempDir()
	state := filepath.Join(out, "state.json")
	pe := `[ "$FAMRUN_RANK" = 0 ] || exit 0
pid=$(jq -r '.memory_famds[0].pid' "$FAMRUN_STATE")
id=$(jq -r '.memory_famds[0].id' "$FAMRUN_STATE")
[ -s "$(jq -r .server_token_file "$FAMRUN_STATE")" ] || { echo "no server token kept"; exit 5; }
kill -9 "$pid"
i=0; while kill -0 "$pid" 2>/dev/null; do i=$((i+1)); [ $i -lt 1200 ] || exit 3; sleep 0.05; done
jq -r '.memory_famds[0].restart[]' "$FAMRUN_STATE" > "$OUT/argv"
mapfile -t argv < "$OUT/argv"
"${argv[@]}" > "$OUT/restarted.log" 2>&1 &
echo $! > "$OUT/restarted.pid"
i=0
until "$FAMCTL" --json servers | jq -e --argjson id "$id" '.memory_servers[] | select(.id == $id and .reachable)' >/dev/null; do
  i=$((i+1)); [ $i -lt 600 ] || { echo "server $id did not come back"; exit 6; }; sleep 0.1
done
grep -q "as memory server $id" "$OUT/restarted.log" || { cat "$OUT/restarted.log"; exit 7; }
echo "restarted server $id"`
	if _, err := exec.LookPath("jq"); err != nil {
		t.Skip("jq is not installed")
	}
	r := runFamrun(t, []string{"FAMD=" + famdBin, "FAMCTL=" + famctlBin, "TMPDIR=" + tmp, "OUT=" + out, "FAMRUN_STATE=" + state}, nil,
		"-n", "2", "--servers", "2", "--grace", "1s", "--", "bash", "-c", pe)
	if b, err := os.ReadFile(filepath.Join(out, "restarted.pid")); err == nil {
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if pid > 0 {
			syscall.Kill(pid, syscall.SIGTERM)
			waitGone(t, pid)
		}
	}
	if r.code != 0 || !strings.Contains(r.stdout, "restarted server") {
		b, _ := os.ReadFile(filepath.Join(out, "restarted.log"))
		t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s\nrestarted famd's log:\n%s", r.code, r.stdout, r.stderr, b)
	}
	var st jobState
	b, err := os.ReadFile(state)
	if err != nil || json.Unmarshal(b, &st) != nil || len(st.MemoryFamds) != 2 || st.Server == "" {
		t.Fatalf("state file %s: %v\n%s", state, err, b)
	}
	if fi, err := os.Stat(state); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("state file mode %v (%v), want 0600", fi.Mode(), err)
	}
	emptyDir(t, tmp)
	leftover(t, tmp)
}
