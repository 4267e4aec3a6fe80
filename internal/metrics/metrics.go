// Package metrics is famd's Prometheus endpoint (famd --metrics-listen):
// counters of the control calls and data-plane requests served, bytes
// moved, errors, and gauges of open sessions, regions and the memory each
// server holds. The counters are fed through the observer hooks of
// packages rpc (rpc.Observer) and transport (transport.Observer); the
// gauges are read from the server when /metrics is scraped, so they cost
// nothing in between.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc/codes"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/rpc"
	"github.com/gofam/openfam/core/transport"
	"github.com/gofam/openfam/core/wire"
)

// Metrics holds famd's metrics. It implements rpc.Observer and
// transport.Observer; give it to the servers' options. Safe for
// concurrent use.
type Metrics struct {
	reg *prometheus.Registry

	calls *prometheus.CounterVec // famd_control_calls_total{method, code}
	// Data-plane counters are resolved once per opcode, so that a request
	// costs two atomic adds and no map lookup or lock.
	ops      [256]prometheus.Counter // famd_data_requests_total{op, result="ok"}
	opErrs   [256]prometheus.Counter // ... result="error"
	bytesGet prometheus.Counter      // famd_data_bytes_total{direction="get"}
	bytesPut prometheus.Counter      // ... direction="put"
	dataErrs prometheus.Counter      // famd_errors_total{plane="data"}
	ctlErrs  prometheus.Counter      // famd_errors_total{plane="control"}
}

var (
	_ rpc.Observer = (*Metrics)(nil)
)

// New returns famd's metrics, with the Go runtime's and the process's
// standard collectors registered beside them.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.calls = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "famd_control_calls_total",
		Help: "Control-plane (gRPC) calls answered, by method and result: OK, the FAM_E* name of a failure the reply carried, or the gRPC code of a call not served (Unauthenticated, Canceled, ...)."},
		[]string{"method", "code"})
	reqs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "famd_data_requests_total",
		Help: "Data-plane requests answered, by operation and result (ok or error)."}, []string{"op", "result"})
	bytes := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "famd_data_bytes_total",
		Help: "Data item bytes moved on the data plane: get (read by clients: gets, gathers) and put (written: puts, scatters)."},
		[]string{"direction"})
	errs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "famd_errors_total",
		Help: "Requests that failed, by plane: control (a FAM error in the reply or a call not served) and data."},
		[]string{"plane"})
	m.reg.MustRegister(m.calls, reqs, bytes, errs)
	for op := wire.OpHello; op.Known(); op++ {
		m.ops[op] = reqs.WithLabelValues(op.String(), "ok")
		m.opErrs[op] = reqs.WithLabelValues(op.String(), "error")
	}
	// An opcode the server does not know is answered too (with an
	// error): count it under one label rather than one per byte value.
	for i := range m.ops {
		if m.ops[i] == nil {
			m.ops[i] = reqs.WithLabelValues("unknown", "ok")
			m.opErrs[i] = reqs.WithLabelValues("unknown", "error")
		}
	}
	m.bytesGet = bytes.WithLabelValues("get")
	m.bytesPut = bytes.WithLabelValues("put")
	m.dataErrs = errs.WithLabelValues("data")
	m.ctlErrs = errs.WithLabelValues("control")
	return m
}

// Call counts one control call (rpc.Observer).
func (m *Metrics) Call(method string, grpcCode codes.Code, famCode int32) {
	code := "OK"
	switch {
	case grpcCode != codes.OK:
		code = grpcCode.String()
	case famCode != 0:
		code = core.Code(famCode).Macro()
	}
	if code != "OK" {
		m.ctlErrs.Inc()
	}
	m.calls.WithLabelValues(method, code).Inc()
}

// Request counts one data-plane request (transport.Observer).
func (m *Metrics) Request(op wire.Op, status uint32, read, written uint64) {
	if status != wire.StatusOK {
		m.opErrs[op].Inc()
		m.dataErrs.Inc()
		return
	}
	m.ops[op].Inc()
	if read != 0 {
		m.bytesGet.Add(float64(read))
	}
	if written != 0 {
		m.bytesPut.Add(float64(written))
	}
}

// Source is what the gauges read at each scrape. Any method may be nil.
type Source struct {
	// Sessions counts the open client sessions.
	Sessions func() int
	// Regions counts the regions of the metadata store.
	Regions func() (int, error)
	// Usage reports the memory each server holds.
	Usage func() ([]rpc.ServerUsage, error)
}

// Watch registers the gauges read from src when /metrics is scraped.
// Call it once.
func (m *Metrics) Watch(src Source) {
	m.reg.MustRegister(&gauges{src: src})
}

var (
	descSessions = prometheus.NewDesc("famd_sessions_open", "Client sessions open (one per client process).", nil, nil)
	descRegions  = prometheus.NewDesc("famd_regions", "Regions in the metadata store.", nil, nil)
	descBytes    = prometheus.NewDesc("famd_memory_bytes",
		"Size of the region memory each server holds (server 0: this famd itself; others: memory servers by id).",
		[]string{"server", "host"}, nil)
	descUsed = prometheus.NewDesc("famd_memory_used_bytes",
		"Bytes allocated to data items in the regions this famd holds itself (server 0).", []string{"server", "host"}, nil)
	descServerRegions = prometheus.NewDesc("famd_memory_regions",
		"Regions with memory on each server.", []string{"server", "host"}, nil)
	descUp = prometheus.NewDesc("famd_memory_server_up",
		"1 when the memory server answered the scrape's probe, else 0.", []string{"server", "host"}, nil)
)

// gauges is the collector of the values read at scrape time.
type gauges struct{ src Source }

func (g *gauges) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descSessions, descRegions, descBytes, descUsed, descServerRegions, descUp} {
		ch <- d
	}
}

func (g *gauges) Collect(ch chan<- prometheus.Metric) {
	if g.src.Sessions != nil {
		ch <- prometheus.MustNewConstMetric(descSessions, prometheus.GaugeValue, float64(g.src.Sessions()))
	}
	if g.src.Regions != nil {
		if n, err := g.src.Regions(); err == nil {
			ch <- prometheus.MustNewConstMetric(descRegions, prometheus.GaugeValue, float64(n))
		} else {
			ch <- prometheus.NewInvalidMetric(descRegions, err)
		}
	}
	if g.src.Usage != nil {
		us, err := g.src.Usage()
		if err != nil {
			ch <- prometheus.NewInvalidMetric(descBytes, err)
			return
		}
		for _, u := range us {
			id := strconv.FormatUint(u.ID, 10)
			up := 0.0
			if u.Reachable {
				up = 1
			}
			if u.ID != 0 {
				ch <- prometheus.MustNewConstMetric(descUp, prometheus.GaugeValue, up, id, u.Hostname)
			}
			if !u.Reachable {
				continue
			}
			ch <- prometheus.MustNewConstMetric(descBytes, prometheus.GaugeValue, float64(u.Bytes), id, u.Hostname)
			ch <- prometheus.MustNewConstMetric(descServerRegions, prometheus.GaugeValue, float64(u.Regions), id, u.Hostname)
			if u.ID == 0 {
				ch <- prometheus.MustNewConstMetric(descUsed, prometheus.GaugeValue, float64(u.Used), id, u.Hostname)
			}
		}
	}
}

// Handler serves the metrics in Prometheus' text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// Server is a running metrics endpoint.
type Server struct {
	l    net.Listener
	srv  *http.Server
	done chan error
}

// Listen serves m on addr (HOST:PORT; port 0 picks one) at /metrics.
func Listen(addr string, m *Metrics) (*Server, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: listening on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.Handler())
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintln(w, "famd: metrics at /metrics")
	})
	s := &Server{l: l, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, done: make(chan error, 1)}
	go func() {
		err := s.srv.Serve(l)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.done <- err
	}()
	return s, nil
}

// Addr is the address served (with the port chosen for port 0).
func (s *Server) Addr() string { return s.l.Addr().String() }

// Failed delivers the error that stopped serving on its own.
func (s *Server) Failed() <-chan error { return s.done }

// Close stops serving, waiting up to timeout for scrapes in progress.
func (s *Server) Close(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return s.srv.Shutdown(ctx)
}

var (
	_ rpc.Observer       = (*Metrics)(nil)
	_ transport.Observer = (*Metrics)(nil)
)
