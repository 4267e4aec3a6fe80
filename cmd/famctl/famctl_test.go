package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gofam/openfam/core/embed"
	"github.com/gofam/openfam/core/rpc"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]uint64{
		"1": 1, "4096": 4096, "4K": 4 << 10, "4k": 4 << 10, "64M": 64 << 20, "2G": 2 << 30,
		"1T": 1 << 40, "8KiB": 8 << 10, "3MB": 3 << 20,
	} {
		got, err := parseSize(in)
		if err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1", "1Q", "K", "1.5M", "99999999999999999999", "20000000T"} {
		if v, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) = %d, want an error", in, v)
		}
	}
}

func TestParseMode(t *testing.T) {
	for in, want := range map[string]uint32{"0600": 0o600, "644": 0o644, "0o755": 0o755, "0": 0, "777": 0o777} {
		got, err := parseMode(in)
		if err != nil || got != want {
			t.Errorf("parseMode(%q) = %o, %v; want %o", in, got, err, want)
		}
	}
	for _, in := range []string{"", "999", "1777", "rw", "0o", "-1"} {
		if v, err := parseMode(in); err == nil {
			t.Errorf("parseMode(%q) = %o, want an error", in, v)
		}
	}
}

func TestFmtSize(t *testing.T) {
	for n, want := range map[uint64]string{0: "0", 1000: "1000", 1024: "1K", 1536: "1.5K", 64 << 20: "64M", 3 << 30: "3G", 1 << 40: "1T"} {
		if got := fmtSize(n); got != want {
			t.Errorf("fmtSize(%d) = %q, want %q", n, got, want)
		}
	}
}

// famdServer is an in-process famd (core/embed) serving a temporary data
// directory on a Unix socket and on TCP.
type famdServer struct {
	sock, dataDir, tcp string
}

// testToken is the cluster token of the test famd's TCP side.
const testToken = "famctl-test-token"

func startFamd(t *testing.T) *famdServer {
	t.Helper()
	d, err := embed.Start(embed.Options{TCPAddr: "127.0.0.1:0", Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("closing famd: %v", err)
		}
	})
	return &famdServer{sock: d.SocketPath(), dataDir: d.DataDir(), tcp: d.Addr()}
}

// famctl runs the command in-process against f and returns the exit
// status, stdout and stderr.
func (f *famdServer) famctl(args ...string) (int, string, string) {
	var so, se bytes.Buffer
	code := run(append([]string{"--server", "unix:" + f.sock}, args...), &so, &se)
	return code, so.String(), se.String()
}

// ok runs famctl and fails the test unless it succeeds.
func (f *famdServer) ok(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := f.famctl(args...)
	if code != 0 {
		t.Fatalf("famctl %v: exit %d, stderr %q", args, code, errOut)
	}
	return out
}

// okJSON runs famctl with --json and decodes its output into v.
func (f *famdServer) okJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	out := f.ok(t, append([]string{"--json"}, args...)...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("famctl --json %v printed invalid JSON: %v\n%s", args, err, out)
	}
}

// fails runs famctl, expects exit status code and returns stdout and stderr.
func (f *famdServer) fails(t *testing.T, code int, args ...string) (string, string) {
	t.Helper()
	got, out, errOut := f.famctl(args...)
	if got != code {
		t.Fatalf("famctl %v: exit %d, want %d; stdout %q stderr %q", args, got, code, out, errOut)
	}
	return out, errOut
}

// allocate makes an item directly through the control plane (famctl has no
// command for it) and returns its offset.
func (f *famdServer) allocate(t *testing.T, regionID uint64, name string, size uint64) uint64 {
	t.Helper()
	conn, err := rpc.DialUnix(f.sock, 60*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := pb.NewFamClient(conn)
	r, err := c.Allocate(ctx, &pb.AllocateRequest{RegionId: regionID, Name: name, Size: size, Mode: 0o600})
	if err != nil || r.GetErr() != nil {
		t.Fatalf("allocate %s: %v %v", name, err, r.GetErr())
	}
	c.CloseItem(ctx, &pb.KeyRequest{Key: r.GetItem().GetKey()})
	return r.GetItem().GetOffset()
}

// lines splits a table into rows of fields.
func lines(s string) [][]string {
	var rows [][]string
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		rows = append(rows, strings.Fields(l))
	}
	return rows
}

// rowFor finds the table row whose column col is v.
func rowFor(t *testing.T, table string, col int, v string) []string {
	t.Helper()
	for _, r := range lines(table) {
		if len(r) > col && r[col] == v {
			return r
		}
	}
	t.Fatalf("no row with %q in column %d of\n%s", v, col, table)
	return nil
}

func TestCommands(t *testing.T) {
	f := startFamd(t)
	me := owner(uint32(os.Getuid()), uint32(os.Getgid()))

	// servers
	out := f.ok(t, "servers")
	for _, s := range []string{"data dir", f.dataDir, "uptime", "unix:" + f.sock, "interleave size  1M (1048576 bytes)"} {
		if !strings.Contains(out, s) {
			t.Errorf("servers does not show %q:\n%s", s, out)
		}
	}
	if !regexp.MustCompile(`(?m)^data plane +tcp$`).MatchString(out) {
		t.Errorf("servers does not show famd's data plane as tcp:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^memory servers +0$`).MatchString(out) || strings.Contains(out, "REACHABLE") {
		t.Errorf("servers of a famd without memory servers:\n%s", out)
	}
	var srv struct {
		Servers        []serverJSON
		MemoryServers  []memoryServerJSON `json:"memory_servers"`
		InterleaveSize uint64             `json:"interleave_size"`
	}
	f.okJSON(t, &srv, "servers")
	if len(srv.Servers) != 1 || srv.Servers[0].DataDir != f.dataDir || srv.Servers[0].Version == "" ||
		srv.Servers[0].Control != "unix:"+f.sock || srv.MemoryServers == nil || len(srv.MemoryServers) != 0 ||
		srv.InterleaveSize != 1<<20 || srv.Servers[0].Provider != "tcp" {
		t.Errorf("servers --json: %+v", srv)
	}

	// create-region, table and JSON forms, options before and after the
	// positional arguments.
	out = f.ok(t, "create-region", "--mode", "0640", "--item-permissions", "r1", "4M")
	if !strings.Contains(out, "created region r1") {
		t.Errorf("create-region said %q", out)
	}
	var r2 regionJSON
	f.okJSON(t, &r2, "create-region", "r2", "1M", "--persistent", "--no-interleave")
	if r2.Name != "r2" || r2.Size != 1<<20 || r2.Mode != "0600" || r2.Memory != "persistent" ||
		r2.Interleave != "disable" || r2.UID != uint32(os.Getuid()) || r2.Owner != me || r2.Used != 0 {
		t.Errorf("create-region --json: %+v", r2)
	}

	// regions
	out = f.ok(t, "regions")
	if h := lines(out)[0]; strings.Join(h, " ") != "ID NAME SIZE USED MODE OWNER TYPE INTERLEAVE BLOCK NSERVERS SERVER_IDS REDUNDANCY" {
		t.Errorf("regions header %v", h)
	}
	row := rowFor(t, out, 1, "r1")
	if row[2] != "4M" || row[3] != "0" || row[4] != "0640" || row[5] != me {
		t.Errorf("regions row for r1: %v", row)
	}
	if row := rowFor(t, out, 1, "r2"); row[6] != "persistent" || row[7] != "off" || row[8] != "1M" ||
		row[9] != "1" || row[10] != "0" || row[0] != fmt.Sprint(r2.ID) {
		t.Errorf("regions row for r2: %v", row)
	}
	var regs struct{ Regions []regionJSON }
	f.okJSON(t, &regs, "regions")
	var r1 regionJSON
	for _, r := range regs.Regions {
		if r.Name == "r1" {
			r1 = r
		}
	}
	if r1.Size != 4<<20 || r1.Mode != "0640" || len(regs.Regions) != 2 {
		t.Errorf("regions --json: %+v", regs)
	}

	// items
	offA := f.allocate(t, r1.ID, "a", 4096)
	offB := f.allocate(t, r1.ID, "b", 100)
	out = f.ok(t, "items", "r1")
	if h := lines(out)[0]; strings.Join(h, " ") != "OFFSET SIZE NAME MODE OWNER" {
		t.Errorf("items header %v", h)
	}
	if row := rowFor(t, out, 2, "a"); row[0] != fmt.Sprint(offA) || row[1] != "4K" || row[3] != "0600" || row[4] != me {
		t.Errorf("items row for a: %v", row)
	}
	if row := rowFor(t, out, 2, "b"); row[0] != fmt.Sprint(offB) || row[1] != "100" {
		t.Errorf("items row for b: %v", row)
	}
	var items struct {
		Region   string
		RegionID uint64 `json:"region_id"`
		Items    []itemJSON
	}
	f.okJSON(t, &items, "items", "r1")
	if items.Region != "r1" || items.RegionID != r1.ID || len(items.Items) != 2 {
		t.Fatalf("items --json: %+v", items)
	}
	for _, it := range items.Items {
		if (it.Name == "a") != (it.Offset == offA) || (it.Name == "a") != (it.Size == 4096) {
			t.Errorf("items --json entry %+v (a is at %d)", it, offA)
		}
	}

	// stat, by name and by id
	out = f.ok(t, "stat", "r1")
	for _, s := range []string{"r1", "4M (4194304 bytes)", "0640", me} {
		if !strings.Contains(out, s) {
			t.Errorf("stat r1 does not show %q:\n%s", s, out)
		}
	}
	var st regionJSON
	f.okJSON(t, &st, "stat", fmt.Sprint(r1.ID))
	if st.Name != "r1" || st.Used < 4096+100 {
		t.Errorf("stat <id> --json: %+v", st)
	}
	var sa itemJSON
	f.okJSON(t, &sa, "stat", "r1", "a")
	if sa.Name != "a" || sa.Offset != offA || sa.Size != 4096 || sa.Rights != "rw" || sa.Region != "r1" || sa.RegionID != r1.ID {
		t.Errorf("stat r1 a --json: %+v", sa)
	}
	if out := f.ok(t, "stat", "r1", "a"); !strings.Contains(out, "4K (4096 bytes)") || !strings.Contains(out, fmt.Sprint(offA)) {
		t.Errorf("stat r1 a:\n%s", out)
	}

	// chmod of an item and of a region
	var ca itemJSON
	f.okJSON(t, &ca, "chmod", "r1", "a", "0644")
	if ca.Mode != "0644" {
		t.Errorf("chmod item --json: %+v", ca)
	}
	if row := rowFor(t, f.ok(t, "items", "r1"), 2, "a"); row[3] != "0644" {
		t.Errorf("after chmod, items shows %v", row)
	}
	if out := f.ok(t, "chmod", "r1", "600"); !strings.Contains(out, "0640 -> 0600") {
		t.Errorf("chmod region said %q", out)
	}
	f.okJSON(t, &st, "stat", "r1")
	if st.Mode != "0600" {
		t.Errorf("after chmod, region mode %s", st.Mode)
	}

	// usage
	var use struct {
		Regions []struct {
			Name       string
			Size, Used uint64
		}
		Total struct{ Regions, Size, Used uint64 }
	}
	f.okJSON(t, &use, "usage")
	if use.Total.Regions != 2 || use.Total.Size != 5<<20 || use.Total.Used < 4096+100 || len(use.Regions) != 2 {
		t.Errorf("usage --json: %+v", use)
	}
	out = f.ok(t, "usage")
	if row := rowFor(t, out, 0, "total"); row[1] != "5M" {
		t.Errorf("usage total row %v", row)
	}

	// destroy-region
	var d struct{ Destroyed regionJSON }
	f.okJSON(t, &d, "destroy-region", "r2", "--yes")
	if d.Destroyed.Name != "r2" {
		t.Errorf("destroy-region --json: %+v", d)
	}
	if out := f.ok(t, "regions"); strings.Contains(out, "r2") {
		t.Errorf("r2 still listed after destroy-region:\n%s", out)
	}

	// Domain errors: exit 1 with the FAM code name.
	_, errOut := f.fails(t, 1, "stat", "nosuch")
	if !strings.Contains(errOut, "FAM_ENOTFOUND") {
		t.Errorf("stat of an unknown region: %q", errOut)
	}
	out, _ = f.fails(t, 1, "--json", "items", "nosuch")
	var e struct {
		Error struct {
			Code int
			Name string
		}
	}
	if err := json.Unmarshal([]byte(out), &e); err != nil || e.Error.Name != "FAM_ENOTFOUND" || e.Error.Code != 8 {
		t.Errorf("--json error output %q (%v)", out, err)
	}
	if _, errOut := f.fails(t, 1, "stat", "r1", "nosuch"); !strings.Contains(errOut, "FAM_ENOTFOUND") {
		t.Errorf("stat of an unknown item: %q", errOut)
	}
	if _, errOut := f.fails(t, 1, "create-region", "r1", "1M"); !strings.Contains(errOut, "FAM_EEXIST") {
		t.Errorf("creating an existing region: %q", errOut)
	}
	if _, errOut := f.fails(t, 1, "destroy-region", "r2"); !strings.Contains(errOut, "FAM_ENOTFOUND") {
		t.Errorf("destroying a destroyed region: %q", errOut)
	}

	// Usage errors: exit 2, found before anything changes.
	for _, args := range [][]string{
		{"create-region", "r3", "1Q"}, {"create-region", "r3", "0"}, {"create-region", "r3", "1M", "--mode", "999"},
		{"create-region", "r3", "1M", "--persistent", "--volatile"}, {"chmod", "r1", "rw"}, {"chmod", "r1", "a", "1777"},
		{"create-region", "r3"}, {"items"}, {"regions", "extra"}, {"frobnicate"}, {"regions", "--bogus"}, {},
	} {
		_, errOut := f.fails(t, 2, args...)
		if !strings.Contains(errOut, "famctl --help") {
			t.Errorf("famctl %v: usage error without a pointer to help: %q", args, errOut)
		}
	}
	if strings.Contains(f.ok(t, "regions"), "r3") {
		t.Error("a refused create-region created the region")
	}
}

func TestTCP(t *testing.T) {
	f := startFamd(t)
	dir := t.TempDir()
	good := filepath.Join(dir, "token")
	bad := filepath.Join(dir, "wrong")
	open := filepath.Join(dir, "open")
	os.WriteFile(good, []byte(testToken+"\n"), 0o600)
	os.WriteFile(bad, []byte("not-the-token"), 0o600)
	os.WriteFile(open, []byte(testToken), 0o644)
	os.Chmod(open, 0o644) // whatever the umask

	for _, addr := range []string{f.tcp, "tcp://" + f.tcp} {
		var so, se bytes.Buffer
		if code := run([]string{"--server", addr, "--token-file", good, "--json", "servers"}, &so, &se); code != 0 {
			t.Fatalf("servers over TCP (%s): exit %d, %s", addr, code, se.String())
		}
		var srv struct{ Servers []serverJSON }
		if err := json.Unmarshal(so.Bytes(), &srv); err != nil || len(srv.Servers) != 1 || srv.Servers[0].DataDir != f.dataDir {
			t.Errorf("servers over TCP: %v %s", err, so.String())
		}
	}
	// The token file may also come from the environment.
	t.Setenv("OPENFAM_TOKEN_FILE", good)
	var so, se bytes.Buffer
	if code := run([]string{"--server", f.tcp, "create-region", "tcp-made", "64K"}, &so, &se); code != 0 {
		t.Errorf("create-region over TCP: exit %d, %s", code, se.String())
	}
	if out := f.ok(t, "regions"); !strings.Contains(out, "tcp-made") {
		t.Errorf("region made over TCP not listed:\n%s", out)
	}
	for tf, want := range map[string]string{bad: "", open: "chmod 600"} {
		se.Reset()
		if code := run([]string{"--server", f.tcp, "--token-file", tf, "regions"}, &so, &se); code != 1 || !strings.Contains(se.String(), want) {
			t.Errorf("token file %s: exit %d, stderr %q; want exit 1 mentioning %q", filepath.Base(tf), code, se.String(), want)
		}
	}
}

func TestConnectionErrors(t *testing.T) {
	var so, se bytes.Buffer
	t.Setenv("OPENFAM_SERVER", "")
	t.Setenv("OPENFAM_TOKEN_FILE", "")
	if code := run([]string{"regions"}, &so, &se); code != 2 || !strings.Contains(se.String(), "OPENFAM_SERVER") {
		t.Errorf("no server: exit %d, %q", code, se.String())
	}
	se.Reset()
	if code := run([]string{"--server", "127.0.0.1:1", "regions"}, &so, &se); code != 2 || !strings.Contains(se.String(), "token") {
		t.Errorf("TCP server without a token file: exit %d, %q", code, se.String())
	}
	se.Reset()
	t.Setenv("OPENFAM_SERVER", "unix:/nonexistent/famd.sock")
	if code := run([]string{"--timeout", "2s", "regions"}, &so, &se); code != 1 || !strings.Contains(se.String(), "/nonexistent/famd.sock") {
		t.Errorf("unreachable server: exit %d, %q", code, se.String())
	}
}

func TestHelp(t *testing.T) {
	var so, se bytes.Buffer
	if code := run([]string{"--help"}, &so, &se); code != 0 {
		t.Fatalf("--help: exit %d", code)
	}
	for _, c := range commands {
		if !strings.Contains(so.String(), c.name) {
			t.Errorf("--help does not list %s", c.name)
		}
	}
	for _, s := range []string{"--server", "--token-file", "--json", "OPENFAM_SERVER", "OPENFAM_TOKEN_FILE"} {
		if !strings.Contains(so.String(), s) {
			t.Errorf("--help does not mention %s", s)
		}
	}
	for _, args := range [][]string{{"help", "create-region"}, {"create-region", "--help"}} {
		so.Reset()
		if code := run(args, &so, &se); code != 0 || !strings.Contains(so.String(), "--persistent") || !strings.Contains(so.String(), "NAME SIZE") {
			t.Errorf("famctl %v: exit %d\n%s", args, code, so.String())
		}
	}
	if code := run([]string{"help", "nosuch"}, &so, &se); code != 2 {
		t.Errorf("help for an unknown command: exit %d", code)
	}
}

// TestMemoryServers runs famctl against a metadata famd with two memory
// servers (in-process, on real sockets): servers lists them, regions and
// stat show where a region lives, and a stopped memory server shows as
// unreachable.
func TestMemoryServers(t *testing.T) {
	dir := t.TempDir()
	meta, err := embed.Start(embed.Options{Role: "metadata", InterleaveSize: 64 << 10, ShmDir: filepath.Join(dir, "meta-shm")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { meta.Close() })
	var mems []*embed.Memory
	for k := 0; k < 2; k++ {
		d := filepath.Join(dir, fmt.Sprint("mem", k))
		mo := embed.MemoryOptions{DataDir: d, ShmDir: d + "-shm", TCPAddr: "127.0.0.1:0",
			DataSocketPath: d + ".sock", Join: "unix:" + meta.SocketPath(), Token: testToken}
		if k == 1 {
			mo.Fabric = shownFabric{} // announces a libfabric data plane
		}
		m, err := embed.StartMemory(mo)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		select {
		case <-m.Joined():
		case <-time.After(60 * time.Second):
			t.Fatal("memory server did not join within 60s")
		}
		mems = append(mems, m)
	}
	f := &famdServer{sock: meta.SocketPath(), dataDir: meta.DataDir()}
	f.ok(t, "create-region", "wide", "1M")
	f.ok(t, "create-region", "narrow", "1M", "--no-interleave")

	out := f.ok(t, "servers")
	if !regexp.MustCompile(`(?m)^memory servers +2$`).MatchString(out) || !strings.Contains(out, "interleave size  64K (65536 bytes)") {
		t.Errorf("servers does not count 2 memory servers with 64K blocks:\n%s", out)
	}
	table := out[strings.Index(out, "ID "):]
	if h := lines(table)[0]; strings.Join(h, " ") != "ID HOST DATA SOCKET REACHABLE SEGMENTS BYTES STATE PROVIDER FABRIC ADDR" {
		t.Fatalf("memory server table header %v", h)
	}
	host, _ := os.Hostname()
	segs := 0
	for _, m := range mems {
		row := rowFor(t, table, 0, fmt.Sprint(m.ID()))
		if row[1] != host || row[2] != m.DataAddr() || row[3] != m.DataSocketPath() || row[4] != "yes" {
			t.Errorf("row of memory server %d: %v", m.ID(), row)
		}
		wantProv, wantAddr := "tcp", "-"
		if m == mems[1] {
			wantProv, wantAddr = "tcp;ofi_rxm", hex.EncodeToString(shownFabric{}.Addr())
		}
		if row[7] != "up" || row[8] != wantProv || row[9] != wantAddr {
			t.Errorf("memory server %d's state and data plane show as %q %q %q, want up %q %q", m.ID(), row[7], row[8], row[9], wantProv, wantAddr)
		}
		n := 0
		fmt.Sscan(row[5], &n)
		segs += n
	}
	// "wide" has a segment on both, "narrow" on one of them.
	if segs != 3 {
		t.Errorf("memory servers hold %d segments, want 3:\n%s", segs, table)
	}
	var js struct {
		MemoryServers  []memoryServerJSON `json:"memory_servers"`
		InterleaveSize uint64             `json:"interleave_size"`
	}
	f.okJSON(t, &js, "servers")
	if len(js.MemoryServers) != 2 || js.InterleaveSize != 64<<10 {
		t.Fatalf("servers --json: %+v", js)
	}
	for i, m := range js.MemoryServers {
		if m.ID != mems[i].ID() || m.DataTCP != mems[i].DataAddr() || m.Control != mems[i].Addr() || !m.Reachable ||
			m.Segments == 0 || m.Bytes == 0 || m.Hostname != host {
			t.Errorf("servers --json entry %d: %+v", i, m)
		}
		if (i == 0 && (m.Provider != "tcp" || m.FabricAddr != "")) ||
			(i == 1 && (m.Provider != "tcp;ofi_rxm" || m.FabricAddr != hex.EncodeToString(shownFabric{}.Addr()))) {
			t.Errorf("servers --json entry %d's data plane: %q %q", i, m.Provider, m.FabricAddr)
		}
	}

	both := fmt.Sprintf("%d,%d", mems[0].ID(), mems[1].ID())
	regions := f.ok(t, "regions")
	if row := rowFor(t, regions, 1, "wide"); row[7] != "on" || row[8] != "64K" || row[9] != "2" || row[10] != both {
		t.Errorf("regions row for wide: %v", row)
	}
	if row := rowFor(t, regions, 1, "narrow"); row[7] != "off" || row[9] != "1" ||
		(row[10] != fmt.Sprint(mems[0].ID()) && row[10] != fmt.Sprint(mems[1].ID())) {
		t.Errorf("regions row for narrow: %v", row)
	}
	if out := f.ok(t, "stat", "wide"); !regexp.MustCompile(`(?m)^server ids +`+both+`$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^server count +2$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^interleave +on$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^interleave size +64K \(65536 bytes\)$`).MatchString(out) {
		t.Errorf("stat wide:\n%s", out)
	}
	var st regionJSON
	f.okJSON(t, &st, "stat", "wide")
	if len(st.Servers) != 2 || st.ServerCount != 2 || st.InterleaveSize != 64<<10 {
		t.Errorf("stat wide --json: %+v", st)
	}
	f.allocate(t, st.ID, "x", 200<<10)
	var it itemJSON
	f.okJSON(t, &it, "stat", "wide", "x")
	if len(it.Servers) != 2 || it.InterleaveSize != 64<<10 {
		t.Errorf("stat wide x --json: %+v", it)
	}

	mems[1].Close()
	out = f.ok(t, "servers")
	if row := rowFor(t, out[strings.Index(out, "ID "):], 0, fmt.Sprint(mems[1].ID())); row[4] != "no" {
		t.Errorf("a stopped memory server shows as %v", row)
	}
}
