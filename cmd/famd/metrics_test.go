package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/rpc"
	"github.com/gofam/openfam/internal/famauth"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// scrape fetches http://addr/metrics and parses it with Prometheus' own
// text parser.
func scrape(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	c := &http.Client{Timeout: 60 * time.Second}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return mfs
}

// value returns the value of the sample of family name whose labels
// include want (0 when there is none).
func value(mfs map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	mf := mfs[name]
	if mf == nil {
		return 0
	}
	sum := 0.0
next:
	for _, m := range mf.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.GetCounter() != nil:
			sum += m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			sum += m.GetGauge().GetValue()
		}
	}
	return sum
}

var (
	metricsAddrRE = regexp.MustCompile(`metrics on http://([^/ ]+)/metrics`)
	tcpAddrRE     = regexp.MustCompile(`gRPC on tcp://([^ ]+) `)
)

// famd --metrics-listen serves /metrics: after a client creates a region,
// puts and gets bytes over the TCP data plane and makes a failing call,
// the counters of calls by method and code, data requests by op, bytes,
// errors, and the gauges of sessions, regions and memory have moved.
func TestMetrics(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte("metrics-test-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := startFamd(t, "--socket", filepath.Join(dir, "famd.sock"), "--data-dir", filepath.Join(dir, "data"),
		"--shm-dir", filepath.Join(dir, "shm"), "--listen", "tcp://127.0.0.1:0", "--token-file", tok,
		"--tcp-identity", fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid()), "--metrics-listen", "127.0.0.1:0")
	line := f.waitLine(t, "serving")
	ma, ta := metricsAddrRE.FindStringSubmatch(line), tcpAddrRE.FindStringSubmatch(line)
	if ma == nil || ta == nil {
		t.Fatalf("startup line names no metrics or TCP address: %q", line)
	}
	if _, port, _ := net.SplitHostPort(ma[1]); port == "0" {
		t.Fatalf("startup line names port 0, not the bound port: %q", line)
	}
	before := scrape(t, ma[1])
	if n := value(before, "famd_regions", nil); n != 0 {
		t.Errorf("famd_regions = %v on an empty data directory", n)
	}

	fam, err := core.Initialize(core.Options{Server: ta[1], TokenFile: tok, UID: -1, GID: -1, PEID: 0, PECount: 1,
		Timeout: 60 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer fam.Finalize()
	r, err := fam.CreateRegion("metrics", 1<<20, 0o600, core.RegionAttr{})
	if err != nil {
		t.Fatal(err)
	}
	it, err := r.Allocate("x", 8192, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	ctx := fam.Default()
	if err := ctx.Put(buf, it, 0); err != nil {
		t.Fatal(err)
	}
	if err := ctx.Get(buf[:1000], it, 100); err != nil {
		t.Fatal(err)
	}
	if _, err := fam.LookupRegion("no-such-region"); core.CodeOf(err) != core.CodeNotFound {
		t.Fatalf("looking up a missing region: %v", err)
	}
	// A call with a wrong token is not served: Unauthenticated.
	conn, err := rpc.DialTCP(ta[1], &famauth.Client{Token: "wrong-token", Mode: famauth.ModeToken}, 60*time.Second)
	if err == nil {
		cctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		_, _ = pb.NewFamClient(conn).Info(cctx, &pb.InfoRequest{})
		cancel()
		conn.Close()
	}

	m := scrape(t, ma[1])
	for _, c := range []struct {
		name   string
		labels map[string]string
		min    float64
	}{
		{"famd_control_calls_total", map[string]string{"method": "CreateRegion", "code": "OK"}, 1},
		{"famd_control_calls_total", map[string]string{"method": "Allocate", "code": "OK"}, 1},
		{"famd_control_calls_total", map[string]string{"method": "LookupRegion", "code": "FAM_ENOTFOUND"}, 1},
		{"famd_control_calls_total", map[string]string{"method": "Info", "code": "Unauthenticated"}, 1},
		{"famd_data_requests_total", map[string]string{"op": "Put", "result": "ok"}, 1},
		{"famd_data_requests_total", map[string]string{"op": "Get", "result": "ok"}, 1},
		{"famd_data_bytes_total", map[string]string{"direction": "put"}, 4096},
		{"famd_data_bytes_total", map[string]string{"direction": "get"}, 1000},
		{"famd_errors_total", map[string]string{"plane": "control"}, 2},
		{"famd_sessions_open", nil, 1},
		{"famd_regions", nil, 1},
		{"famd_memory_bytes", map[string]string{"server": "0"}, 1 << 20},
		{"famd_memory_used_bytes", map[string]string{"server": "0"}, 8192},
		{"famd_memory_regions", map[string]string{"server": "0"}, 1},
	} {
		if v := value(m, c.name, c.labels); v < c.min {
			t.Errorf("%s%v = %v, want at least %v", c.name, c.labels, v, c.min)
		}
	}
	if t.Failed() {
		var names []string
		for n := range m {
			if strings.HasPrefix(n, "famd_") {
				names = append(names, n)
			}
		}
		t.Logf("famd families: %v", names)
	}
}

// A --metrics-listen address that is taken fails the start at once,
// naming it.
func TestMetricsListenTaken(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	dir := t.TempDir()
	code, _, stderr := runFamd(t, "--socket", filepath.Join(dir, "famd.sock"), "--data-dir", filepath.Join(dir, "data"),
		"--metrics-listen", l.Addr().String())
	if code != exitFailure || !strings.Contains(stderr, l.Addr().String()) {
		t.Fatalf("metrics port taken: exit %d, stderr %q", code, stderr)
	}
	if code, _, stderr := runFamd(t, "--socket", filepath.Join(dir, "famd.sock"), "--metrics-listen", "nonsense"); code != exitUsage {
		t.Fatalf("--metrics-listen nonsense: exit %d, stderr %q", code, stderr)
	}
}

// A metadata famd reports each memory server's memory, and a memory
// server (--role memory --metrics-listen) its own segments and the data
// requests it served.
func TestMetricsMemoryServer(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte("cluster\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	metaSock := filepath.Join(dir, "meta.sock")
	meta := startFamd(t, "--role", "metadata", "--socket", metaSock, "--data-dir", filepath.Join(dir, "meta"),
		"--shm-dir", filepath.Join(dir, "meta-shm"), "--metrics-listen", "127.0.0.1:0")
	mm := metricsAddrRE.FindStringSubmatch(meta.waitLine(t, "serving"))
	d := filepath.Join(dir, "mem")
	mem := startFamd(t, "--role", "memory", "--join", "unix:"+metaSock, "--listen", "tcp://127.0.0.1:0",
		"--token-file", tok, "--data-dir", d, "--shm-dir", d+"-shm", "--metrics-listen", "127.0.0.1:0")
	ms := metricsAddrRE.FindStringSubmatch(mem.waitLine(t, "serving"))
	if mm == nil || ms == nil {
		t.Fatalf("a serving line names no metrics address:\n%s\n%s", meta.log.String(), mem.log.String())
	}
	sub := joinedRe.FindStringSubmatch(mem.waitLine(t, "joined the metadata famd"))
	if sub == nil {
		t.Fatalf("memory server did not say it joined:\n%s", mem.log.String())
	}
	id := sub[2]

	fam, err := core.Initialize(core.Options{Server: "unix:" + metaSock, TokenFile: tok, UID: -1, GID: -1,
		PEID: 0, PECount: 1, Timeout: 60 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer fam.Finalize()
	r, err := fam.CreateRegion("striped", 2<<20, 0o600, core.RegionAttr{})
	if err != nil {
		t.Fatal(err)
	}
	it, err := r.Allocate("x", 4096, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := fam.Default().Put(make([]byte, 4096), it, 0); err != nil {
		t.Fatal(err)
	}

	m := scrape(t, mm[1])
	if v := value(m, "famd_memory_bytes", map[string]string{"server": id}); v <= 0 {
		t.Errorf("metadata famd: famd_memory_bytes{server=%q} = %v, want the region's segment", id, v)
	}
	if v := value(m, "famd_memory_server_up", map[string]string{"server": id}); v != 1 {
		t.Errorf("metadata famd: famd_memory_server_up{server=%q} = %v", id, v)
	}
	if v := value(m, "famd_memory_bytes", map[string]string{"server": "0"}); v != 0 {
		t.Errorf("role metadata reports %v bytes of its own", v)
	}
	m = scrape(t, ms[1])
	if v := value(m, "famd_memory_regions", map[string]string{"server": id}); v != 1 {
		t.Errorf("memory server: famd_memory_regions{server=%q} = %v, want 1", id, v)
	}
	if v := value(m, "famd_data_bytes_total", map[string]string{"direction": "put"}); v < 4096 {
		t.Errorf("memory server: famd_data_bytes_total{direction=put} = %v, want at least 4096", v)
	}
}
