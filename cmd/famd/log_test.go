package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gofam/openfam/core"
)

// jsonRecord is one line of famd --log-format json.
type jsonRecord struct {
	Time  string `json:"time"`
	Level string `json:"level"`
	Msg   string `json:"msg"`
}

// parseJSONLog parses every line of log as a JSON record with a time, a
// level and a message.
func parseJSONLog(t *testing.T, log string) []jsonRecord {
	t.Helper()
	var recs []jsonRecord
	for _, l := range strings.Split(strings.TrimSpace(log), "\n") {
		var r jsonRecord
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("log line is not JSON (%v): %s", err, l)
		}
		if r.Time == "" || r.Level == "" || r.Msg == "" {
			t.Fatalf("log line lacks time, level or msg: %s", l)
		}
		recs = append(recs, r)
	}
	return recs
}

// wantRecord fails unless some record at level has a message matching re.
func wantRecord(t *testing.T, recs []jsonRecord, level, re string) {
	t.Helper()
	rx := regexp.MustCompile(re)
	for _, r := range recs {
		if r.Level == level && rx.MatchString(r.Msg) {
			return
		}
	}
	t.Errorf("no %s record matching %q in:\n%+v", level, re, recs)
}

// famd --log-format json writes one JSON object per line, with a level,
// and logs the events operators follow: sessions, regions created and
// destroyed (info), a wrong cluster token (warn), volatile regions lost
// to a reboot (info).
func TestJSONLog(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "famd.sock")
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte("sesame\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wrong := filepath.Join(dir, "wrong")
	if err := os.WriteFile(wrong, []byte("guess\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--log-format", "json", "--socket", sock, "--listen", "tcp://127.0.0.1:0",
		"--token-file", tok, "--tcp-identity", "65534:65534", "--data-dir", filepath.Join(dir, "data"), "--shm-dir", filepath.Join(dir, "shm")}
	f := startFamd(t, args...)
	line := f.waitLine(t, "serving")
	m := regexp.MustCompile(`gRPC on tcp://(\S+) `).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("serving line %q: no TCP address", line)
	}

	o := core.DefaultOptions()
	o.Server, o.Timeout, o.PEID, o.PECount = "unix:"+sock, 60*time.Second, 0, 1
	fam, err := core.Initialize(o)
	if err != nil {
		t.Fatal(err)
	}
	r, err := fam.CreateRegion("logged", 1<<20, 0o600, core.RegionAttr{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Destroy(); err != nil {
		t.Fatal(err)
	}
	if _, err := fam.CreateRegion("fleeting", 1<<20, 0o600, core.RegionAttr{Memory: core.Volatile}); err != nil {
		t.Fatal(err)
	}
	fam.Finalize()
	f.waitLine(t, "ended")

	o = core.DefaultOptions()
	o.Server, o.TokenFile, o.Timeout, o.PEID, o.PECount = m[1], wrong, 60*time.Second, 0, 1
	if _, err := core.Initialize(o); core.CodeOf(err) != core.CodeNoPerm {
		t.Fatalf("wrong token: %v", err)
	}
	f.waitLine(t, "authentication failed")
	code, log := f.stop(t, syscall.SIGTERM)
	if code != 0 {
		t.Fatalf("exit %d, log:\n%s", code, log)
	}
	recs := parseJSONLog(t, log)
	wantRecord(t, recs, "INFO", `serving`)
	wantRecord(t, recs, "INFO", `^session \d+ opened: uid \d+`)
	wantRecord(t, recs, "INFO", `^session \d+ ended`)
	wantRecord(t, recs, "INFO", `^region "logged" created: 1048576 bytes, mode 0600, volatile`)
	wantRecord(t, recs, "INFO", `^region "logged" \(id \d+\) destroyed by uid`)
	wantRecord(t, recs, "WARN", `^authentication failed: .* from 127\.0\.0\.1:\d+: missing or wrong cluster token`)
	wantRecord(t, recs, "INFO", `^SIGTERM: stopping`)

	// A reboot empties the shm directory: the next famd drops the
	// volatile region and says so.
	if err := os.RemoveAll(filepath.Join(dir, "shm")); err != nil {
		t.Fatal(err)
	}
	f = startFamd(t, args...)
	f.waitLine(t, "serving")
	code, log = f.stop(t, syscall.SIGTERM)
	if code != 0 {
		t.Fatalf("exit %d, log:\n%s", code, log)
	}
	wantRecord(t, parseJSONLog(t, log), "INFO", `^dropped volatile region "fleeting"`)
}

// famd warns at startup when its data directory belongs to another user
// (root serving a user's directory): the files it creates there will not
// match the rest.
func TestForeignDataDirWarns(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give the data directory to another user (uid 65534)")
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(data, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	f := startFamd(t, "--socket", filepath.Join(dir, "famd.sock"), "--data-dir", data)
	f.waitLine(t, "serving")
	code, log := f.stop(t, syscall.SIGTERM)
	if code != 0 {
		t.Fatalf("exit %d, log:\n%s", code, log)
	}
	if !regexp.MustCompile(`level=WARN msg="data directory \S+ is owned by uid 65534, not by uid 0`).MatchString(log) {
		t.Fatalf("no warning about the data directory's owner in:\n%s", log)
	}
	// The directory famd made for itself gets no such warning.
	own := filepath.Join(dir, "own")
	f = startFamd(t, "--socket", filepath.Join(dir, "own.sock"), "--data-dir", own)
	f.waitLine(t, "serving")
	if _, log := f.stop(t, syscall.SIGTERM); strings.Contains(log, "is owned by uid") {
		t.Fatalf("warned about famd's own data directory:\n%s", log)
	}
}
