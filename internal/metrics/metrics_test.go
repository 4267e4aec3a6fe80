package metrics

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/gofam/openfam/core/rpc"
	"github.com/gofam/openfam/core/wire"
)

// get scrapes the endpoint and returns the body.
func get(t *testing.T, url string) string {
	t.Helper()
	c := &http.Client{Timeout: 60 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s\n%s", url, resp.Status, b)
	}
	return string(b)
}

// The observers' counts and the gauges read at scrape time appear in the
// exposition with the labels operators query: FAM_E* names for failures
// carried in replies, gRPC code names for calls not served, one series
// per data-plane op and result, a memory server that did not answer shown
// as down without sizes.
func TestExposition(t *testing.T) {
	m := New()
	m.Call("CreateRegion", codes.OK, 0)
	m.Call("LookupRegion", codes.OK, 8)
	m.Call("Info", codes.Unauthenticated, 0)
	m.Call("Allocate", codes.OK, 99)
	m.Request(wire.OpGet, wire.StatusOK, 4096, 0)
	m.Request(wire.OpScatterStrided, wire.StatusOK, 0, 640)
	m.Request(wire.OpPut, wire.StatusStaleKey, 0, 0)
	m.Request(wire.Op(200), 4, 0, 0)
	m.Request(wire.OpFabricKey, wire.StatusOK, 0, 0)
	m.Watch(Source{
		Sessions: func() int { return 3 },
		Regions:  func() (int, error) { return 0, errors.New("store closed") },
		Usage: func() ([]rpc.ServerUsage, error) {
			return []rpc.ServerUsage{
				{ID: 0, Hostname: "meta", Reachable: true, Regions: 2, Bytes: 1 << 21, Used: 4096},
				{ID: 1, Hostname: "mem1", Reachable: true, Regions: 1, Bytes: 1 << 20},
				{ID: 2, Hostname: "mem2"},
			}, nil
		},
	})
	s, err := Listen("127.0.0.1:0", m)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(5 * time.Second)
	body := get(t, "http://"+s.Addr()+"/metrics")
	for _, want := range []string{
		`famd_control_calls_total{code="OK",method="CreateRegion"} 1`,
		`famd_control_calls_total{code="FAM_ENOTFOUND",method="LookupRegion"} 1`,
		`famd_control_calls_total{code="Unauthenticated",method="Info"} 1`,
		`famd_control_calls_total{code="FAM_E99",method="Allocate"} 1`,
		`famd_errors_total{plane="control"} 3`,
		`famd_errors_total{plane="data"} 2`,
		`famd_data_requests_total{op="Get",result="ok"} 1`,
		`famd_data_requests_total{op="ScatterStrided",result="ok"} 1`,
		`famd_data_requests_total{op="Put",result="error"} 1`,
		`famd_data_requests_total{op="unknown",result="error"} 1`,
		`famd_data_requests_total{op="FabricKey",result="ok"} 1`,
		`famd_data_bytes_total{direction="get"} 4096`,
		`famd_data_bytes_total{direction="put"} 640`,
		`famd_sessions_open 3`,
		`famd_memory_bytes{host="meta",server="0"} 2.097152e+06`,
		`famd_memory_used_bytes{host="meta",server="0"} 4096`,
		`famd_memory_bytes{host="mem1",server="1"} 1.048576e+06`,
		`famd_memory_regions{host="mem1",server="1"} 1`,
		`famd_memory_server_up{host="mem1",server="1"} 1`,
		`famd_memory_server_up{host="mem2",server="2"} 0`,
		`go_goroutines `,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	// No sizes for a server that did not answer; no region count when
	// the store failed to give one (the rest of the scrape still works).
	for _, bad := range []string{`famd_memory_bytes{host="mem2"`, "famd_regions "} {
		if strings.Contains(body, bad) {
			t.Errorf("/metrics has %q", bad)
		}
	}
	if t.Failed() {
		t.Logf("exposition:\n%s", body)
	}
	if b := get(t, "http://"+s.Addr()+"/"); !strings.Contains(b, "/metrics") {
		t.Errorf("/ says %q", b)
	}
}

// A data-plane request costs no allocation.
func TestRequestAllocs(t *testing.T) {
	m := New()
	if n := testing.AllocsPerRun(1000, func() { m.Request(wire.OpGet, wire.StatusOK, 4096, 0) }); n != 0 {
		t.Errorf("Request allocates %v times per call", n)
	}
}

// BenchmarkRequest is the cost the observer adds to each data-plane
// request.
func BenchmarkRequest(b *testing.B) {
	m := New()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.Request(wire.OpGet, wire.StatusOK, 4096, 0)
		}
	})
}
