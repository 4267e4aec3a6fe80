package main

import (
	"strings"
	"time"

	"github.com/gofam/openfam/internal/metrics"
)

// metricsEndpoint is famd --metrics-listen: the metrics and the HTTP
// server publishing them. A nil *metricsEndpoint (no flag) is valid and
// does nothing.
type metricsEndpoint struct {
	m      *metrics.Metrics
	srv    *metrics.Server
	closed bool
}

// startMetrics listens on addr ("" for none) before famd opens anything
// else, so that a taken port fails the start at once. It returns the
// exit status to stop with when that fails.
func startMetrics(addr string, lg *logger) (*metricsEndpoint, int) {
	if addr == "" {
		return nil, exitOK
	}
	m := metrics.New()
	srv, err := metrics.Listen(strings.TrimPrefix(addr, "http://"), m)
	if err != nil {
		lg.errorf("cannot start: --metrics-listen: %v", err)
		return nil, exitFailure
	}
	return &metricsEndpoint{m: m, srv: srv}, exitOK
}

// failed delivers an error when the endpoint stops on its own; nil (a
// channel that never delivers) without one.
func (e *metricsEndpoint) failed() <-chan error {
	if e == nil {
		return nil
	}
	return e.srv.Failed()
}

// close stops the endpoint; later calls do nothing. famd calls it from
// its main goroutine only.
func (e *metricsEndpoint) close(lg *logger) {
	if e == nil || e.closed {
		return
	}
	e.closed = true
	if err := e.srv.Close(5 * time.Second); err != nil {
		lg.warnf("stopping the metrics endpoint: %v", err)
	}
}
