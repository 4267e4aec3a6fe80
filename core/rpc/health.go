package rpc

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/metadata"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// memberConnectParams bound how long famd's connection to a memory server
// that went away waits between attempts to reach it again (gRPC's default
// grows to two minutes): a server that comes back must answer the next
// health probe and take its owed revocations within about a second.
// (ResetConnectBackoff did this before, but in grpc-go 1.85 it reads the
// connection's subchannel map outside its lock, a data race with a call
// that connects at the same time: the race detector caught it once the
// probes ran beside retryOwed.)
var memberConnectParams = grpc.ConnectParams{
	Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
	MinConnectTimeout: 2 * time.Second,
}

// HealthOptions tune how the metadata famd decides that a memory server
// is down (issue 16). Zero values take the defaults.
type HealthOptions struct {
	// Interval between health probes of each joined memory server
	// (default 1s). A probe is the server's Info call.
	Interval time.Duration
	// ProbeTimeout bounds one probe (default 1s, at most Interval*2).
	ProbeTimeout time.Duration
	// FailedProbes is how many probes in a row must fail before famd
	// declares the server down (default 3). A probe that fails after a
	// client reported the server declares it down at once.
	FailedProbes int
	// Settle is how long famd waits, once it told every session that a
	// server is rebuilding (so clients write to it again), before the
	// rebuild copies anything (default 1s): writes a client had already
	// routed around the server finish within it.
	Settle time.Duration
	// PollInterval is how often a running rebuild's progress is asked
	// for (default 500ms).
	PollInterval time.Duration
	// RetryInterval is how long a failed rebuild of a region waits before
	// it is tried again (default 5s).
	RetryInterval time.Duration
}

func (o *HealthOptions) defaults() {
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	if o.ProbeTimeout <= 0 {
		o.ProbeTimeout = time.Second
	}
	if o.FailedProbes <= 0 {
		o.FailedProbes = 3
	}
	if o.Settle <= 0 {
		o.Settle = time.Second
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 500 * time.Millisecond
	}
	if o.RetryInterval <= 0 {
		o.RetryInterval = 5 * time.Second
	}
}

// Rebuilder rebuilds a memory server's copy of a redundant region from
// the other servers of the region. The metadata famd orchestrates; the
// memory server does the copying (in the background, while clients keep
// writing to it). The Cluster's real implementation calls the memory
// server's Memory service (issue 16's Rebuild call); tests pass fakes.
type Rebuilder interface {
	// StartRebuild asks memory server target to make its copy of region
	// rec current from rec's other servers, starting at byte from of the
	// rebuild's own order (0: whole; a watermark an earlier rebuild of the
	// same incarnation reported). It returns once the server accepted
	// the work; a second call for a rebuild that runs already must not
	// start another.
	StartRebuild(ctx context.Context, target uint64, rec metadata.Region, from uint64) error
	// RebuildProgress says how far target's rebuild of region regionID
	// went.
	RebuildProgress(ctx context.Context, target uint64, regionID uint64) (RebuildProgress, error)
}

// RebuildProgress is one answer of Rebuilder.RebuildProgress.
type RebuildProgress struct {
	Done, Total uint64 // bytes made current, and to make current
	Finished    bool   // the copy is current
	Failed      string // the rebuild stopped on this error ("" if not)
}

// serverHealth is what the monitor knows of one memory server.
type serverHealth struct {
	state    pb.ServerState
	since    time.Time
	fails    int    // probes failed in a row
	lastErr  string // last failed probe's or report's error
	reported bool   // a client reported it since the last probe
	// gen changes at every transition; a recovery running for an older
	// generation stops.
	gen uint64
	// recovering is set while a recovery goroutine runs for it.
	recovering bool
}

// health is the metadata famd's membership of its memory servers: probes,
// client reports, the down decision, recovery (rebuild) of servers that
// come back, and the persisted state of every copy that is not current.
type health struct {
	c     *Cluster
	opts  HealthOptions
	store *redundancyStore

	mu      sync.Mutex
	servers map[uint64]*serverHealth
	copies  map[copyKey]*copyRecord
	// subs are told of every state change, under mu, in order.
	subs []func(id uint64, st pb.ServerState)
	// regions lists every region of the instance (set by the Server);
	// nil: none known, so nothing is redundant.
	regions   func() ([]metadata.Region, error)
	rebuilder Rebuilder
	// regrant re-issues the live keys of placed items on server id (a
	// server that restarted holds no grants); set by the Server.
	regrant func(id uint64)
	// delivered waits (up to a deadline) until every open client session
	// was sent the state changes made so far; set by the Server.
	delivered func(deadline time.Time) bool

	kick chan uint64 // server ids reported by clients
	stop chan struct{}
	wg   sync.WaitGroup
}

// stateName is the lower-case name famd logs and famctl shows.
func stateName(st pb.ServerState) string {
	return strings.ToLower(strings.TrimPrefix(st.String(), "SERVER_"))
}

// incarnation names a server incarnation without keeping its secret.
func incarnation(secret string) string {
	h := sha256.Sum256([]byte("openfam incarnation\x00" + secret))
	return hex.EncodeToString(h[:8])
}

// newHealth loads redundancy.db of c's data directory. Servers it
// records as down or rebuilding start down: their copies stay stale
// until a rebuild finishes.
func newHealth(c *Cluster, opts HealthOptions) (*health, error) {
	opts.defaults()
	st, servers, copies, err := openRedundancyStore(c.opts.DataDir)
	if err != nil {
		return nil, err
	}
	h := &health{c: c, opts: opts, store: st, servers: map[uint64]*serverHealth{}, copies: map[copyKey]*copyRecord{},
		kick: make(chan uint64, 64), stop: make(chan struct{})}
	now := time.Now()
	for id, r := range servers {
		// Whatever it was doing, a rebuild did not survive famd's restart:
		// the server is down until a probe finds it and a rebuild ends.
		h.servers[id] = &serverHealth{state: pb.ServerState_SERVER_DOWN, since: time.Unix(0, r.Since), lastErr: r.Reason}
		if r.Since == 0 {
			h.servers[id].since = now
		}
	}
	for k, r := range copies {
		r := r
		h.copies[k] = &r
		if _, ok := h.servers[k.Server]; !ok {
			// A stale copy on a server not recorded down (a crash between
			// the two records): the copy is what matters; rebuild it.
			h.servers[k.Server] = &serverHealth{state: pb.ServerState_SERVER_DOWN, since: now, lastErr: "stale copies recorded"}
		}
	}
	return h, nil
}

func (h *health) logf(format string, args ...any) { h.c.logf(format, args...) }

// start runs the probe loop until close.
func (h *health) start() {
	h.mu.Lock()
	for id, sh := range h.servers {
		if sh.state == pb.ServerState_SERVER_DOWN {
			h.logf("famd: memory server %d is down since %s (recorded): its copies of %d redundant regions stay stale until rebuilt",
				id, sh.since.UTC().Format(time.RFC3339), h.staleCountLocked(id))
		}
	}
	h.mu.Unlock()
	h.wg.Add(1)
	go h.loop()
}

// close stops the probe loop and every recovery, and closes the store.
func (h *health) close() {
	select {
	case <-h.stop:
	default:
		close(h.stop)
	}
	h.wg.Wait()
	h.store.close()
}

// stateLocked returns id's record, making an up one for a server not seen
// before.
func (h *health) stateLocked(id uint64) *serverHealth {
	sh := h.servers[id]
	if sh == nil {
		sh = &serverHealth{state: pb.ServerState_SERVER_UP, since: time.Now()}
		h.servers[id] = sh
	}
	return sh
}

// loop probes every member each Interval, and a reported one at once.
// With no member it only waits: an idle famd costs nothing.
func (h *health) loop() {
	defer h.wg.Done()
	t := time.NewTicker(h.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case id := <-h.kick:
			h.probe([]uint64{id})
		case <-t.C:
			h.c.mu.Lock()
			ids := h.c.idsLocked()
			h.c.mu.Unlock()
			if len(ids) > 0 {
				h.probe(ids)
			}
		}
	}
}

// probe asks each of ids for its Info, in parallel, and applies the
// answers.
func (h *health) probe(ids []uint64) {
	ms, err := h.c.pick(ids)
	if err != nil {
		return
	}
	errs := make([]error, len(ms))
	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), h.opts.ProbeTimeout)
			defer cancel()
			_, errs[i] = m.cl.Info(ctx, &pb.InfoRequest{})
		}()
	}
	wg.Wait()
	for i, m := range ms {
		h.c.mu.Lock()
		cur := h.c.members[m.rec.ID] == m
		h.c.mu.Unlock()
		if !cur {
			// The server joined again while the probe was out (its old
			// connection closed under it): the answer is about an
			// incarnation that is gone.
			continue
		}
		h.probed(m.rec.ID, errs[i])
	}
}

// probed applies one probe's outcome.
func (h *health) probed(id uint64, err error) {
	h.mu.Lock()
	sh := h.stateLocked(id)
	reported := sh.reported
	sh.reported = false
	if err == nil {
		sh.fails = 0
		switch sh.state {
		case pb.ServerState_SERVER_SUSPECT:
			h.setLocked(id, sh, pb.ServerState_SERVER_UP, "answers again")
		case pb.ServerState_SERVER_DOWN:
			h.recoverLocked(id, sh, "answers again")
		}
		h.mu.Unlock()
		return
	}
	sh.fails++
	sh.lastErr = err.Error()
	if sh.state == pb.ServerState_SERVER_DOWN {
		h.mu.Unlock()
		return
	}
	if sh.fails < h.opts.FailedProbes && !reported {
		if sh.state == pb.ServerState_SERVER_UP {
			h.setLocked(id, sh, pb.ServerState_SERVER_SUSPECT, fmt.Sprintf("probe failed: %v", err))
		}
		h.mu.Unlock()
		return
	}
	why := fmt.Sprintf("%d failed probes in a row", sh.fails)
	if reported && sh.fails < h.opts.FailedProbes {
		why = "a client reported it and the probe failed"
	}
	gen := sh.gen
	h.mu.Unlock()
	// The region listing takes the core's locks: never under h.mu, since
	// the core may ask the Cluster (placement) while holding them.
	regs := h.redundantOn(id)
	h.mu.Lock()
	defer h.mu.Unlock()
	if sh.gen == gen && sh.state != pb.ServerState_SERVER_DOWN {
		h.downLocked(id, sh, fmt.Sprintf("%s (%v)", why, err), regs)
	}
}

// report records a client's word that id failed an operation and probes
// it at once (without waiting for the probe).
//
// With wroteAround the client completed a write without the server: its
// redundant copies may be older than the survivors', so they are stale
// from now on whatever the probe finds (and a rebuild under way starts
// again from 0, since the write may lie below its watermark).
// from names the reporting client for famd's log only: ServerInfo's
// last_error, which every client may read, keeps just the error.
func (h *health) report(id uint64, why, from string, wroteAround bool) error {
	h.c.mu.Lock()
	_, ok := h.c.members[id]
	h.c.mu.Unlock()
	if !ok {
		return fmt.Errorf("memory server %d is not registered", id)
	}
	if wroteAround {
		regs := h.redundantOn(id)
		h.mu.Lock()
		sh := h.stateLocked(id)
		if sh.state != pb.ServerState_SERVER_DOWN && len(regs) > 0 {
			for _, r := range regs {
				if c := h.copies[copyKey{r.ID, id}]; c != nil {
					c.Watermark, c.Incarnation = 0, ""
				}
			}
			h.logf("famd: memory server %d: a client (%s) wrote around it: %s", id, from, why)
			h.downLocked(id, sh, "a client completed a write without it ("+why+")", regs)
		}
		h.mu.Unlock()
	}
	h.mu.Lock()
	sh := h.stateLocked(id)
	// After a write around it the server is down and must be probed to
	// start its rebuild.
	first := (!sh.reported && sh.state != pb.ServerState_SERVER_DOWN) || wroteAround
	sh.reported = true
	if why != "" {
		sh.lastErr = why
	}
	h.mu.Unlock()
	if !first {
		// A probe for an earlier report is pending, or the server is down
		// already: many PEs reporting one failure cost one probe.
		return nil
	}
	h.logf("famd: memory server %d reported by a client (%s): %s; probing it now", id, from, why)
	select {
	case h.kick <- id:
	default:
		// The loop is behind; its next tick probes every server anyway.
	}
	return nil
}

// setLocked moves id to st, logs it and tells the subscribers.
func (h *health) setLocked(id uint64, sh *serverHealth, st pb.ServerState, why string) {
	if sh.state == st {
		return
	}
	old := sh.state
	sh.state, sh.since = st, time.Now()
	sh.gen++
	h.logf("famd: memory server %d %s -> %s: %s", id, stateName(old), stateName(st), why)
	var rec *serverRecord
	if st == pb.ServerState_SERVER_DOWN || st == pb.ServerState_SERVER_REBUILDING {
		rec = &serverRecord{State: stateName(st), Since: sh.since.UnixNano(), Reason: sh.lastErr}
	}
	if recorded(old) || recorded(st) {
		if err := h.store.putServer(id, rec); err != nil {
			h.logf("famd: recording memory server %d %s: %v", id, stateName(st), err)
		}
	}
	for _, fn := range h.subs {
		fn(id, st)
	}
}

// recorded reports whether redundancy.db keeps servers in state st.
func recorded(st pb.ServerState) bool {
	return st == pb.ServerState_SERVER_DOWN || st == pb.ServerState_SERVER_REBUILDING
}

// startHealth opens the Cluster's membership state and starts probing.
func (c *Cluster) startHealth() error {
	h, err := newHealth(c, c.opts.Health)
	if err != nil {
		return err
	}
	c.health = h
	// Membership alone starts rebuilds (spec/membership.md): a rejoining
	// server is rebuilt through the Cluster's Rebuild (rebuild_r1.go).
	h.rebuilder = newClusterRebuilder(c)
	h.start()
	return nil
}

// regionSource returns the region lister (nil: none).
func (h *health) regionSource() func() ([]metadata.Region, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.regions
}

// redundantOn lists the redundant regions with a copy on server id. The
// caller must not hold h.mu (the listing takes the core's locks).
func (h *health) redundantOn(id uint64) []metadata.Region {
	list := h.regionSource()
	if list == nil {
		return nil
	}
	recs, err := list()
	if err != nil {
		h.logf("famd: listing regions for memory server %d's copies: %v", id, err)
		return nil
	}
	var out []metadata.Region
	for _, r := range recs {
		if isRedundant(r) && slices.Contains(r.Servers, id) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b metadata.Region) int { return cmpU64(a.ID, b.ID) })
	return out
}

func isRedundant(r metadata.Region) bool {
	red := core.Redundancy(r.Redundancy)
	return red == core.RAID1 || red == core.RAID5
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// downLocked declares id down: every redundant region's copy on it is
// stale from now on (recorded before clients are told, so that no write
// that skips it can precede the record).
func (h *health) downLocked(id uint64, sh *serverHealth, why string, regs []metadata.Region) {
	recs := map[copyKey]*copyRecord{}
	now := time.Now().UnixNano()
	for _, r := range regs {
		k := copyKey{r.ID, id}
		if old := h.copies[k]; old != nil {
			// Stale already (a rebuild was under way): its watermark stays,
			// for a rebuild of the same incarnation to resume from.
			old.State = copyStale
			recs[k] = old
			continue
		}
		c := &copyRecord{State: copyStale, Since: now}
		h.copies[k] = c
		recs[k] = c
	}
	if err := h.store.putCopies(recs); err != nil {
		h.logf("famd: recording the stale copies on memory server %d: %v", id, err)
	}
	sh.lastErr = why
	h.setLocked(id, sh, pb.ServerState_SERVER_DOWN, fmt.Sprintf("declared down after %s; %d redundant regions degraded", why, len(regs)))
}

// join registers a memory server (Fam.Join); one that restarted goes
// through recovery (see rejoined).
func (c *Cluster) join(req *pb.JoinRequest) (uint64, error) {
	id, rejoin, err := c.register(req)
	if err != nil {
		return 0, err
	}
	if rejoin {
		c.health.rejoined(id)
	}
	return id, nil
}

// rejoined is called when a known server joins again (it restarted, or
// a replacement took its identity): the grants and, for volatile regions,
// the bytes of the earlier incarnation are gone, so every redundant copy
// on it is stale and is rebuilt before it counts as current.
func (h *health) rejoined(id uint64) {
	regs := h.redundantOn(id)
	h.mu.Lock()
	defer h.mu.Unlock()
	sh := h.stateLocked(id)
	sh.fails = 0
	if sh.state != pb.ServerState_SERVER_DOWN && len(regs) > 0 {
		h.downLocked(id, sh, "it restarted (joined again)", regs)
	}
	if sh.state == pb.ServerState_SERVER_DOWN {
		h.recoverLocked(id, sh, "joined again")
	}
}

// recoverLocked starts bringing a down server that answers back: up at
// once when it holds no stale copy, else rebuilding in the background.
func (h *health) recoverLocked(id uint64, sh *serverHealth, why string) {
	select {
	case <-h.stop:
		return
	default:
	}
	if sh.recovering {
		return
	}
	sh.recovering = true
	gen := sh.gen
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		h.recover(id, gen, why)
		h.mu.Lock()
		sh.recovering = false
		// The server may have gone down and come back while this ran
		// (for the older generation): the probe loop starts a new one.
		h.mu.Unlock()
	}()
}

// staleLocked lists id's copies that are not current, by region id.
func (h *health) staleLocked(id uint64) []copyKey {
	var ks []copyKey
	for k := range h.copies {
		if k.Server == id {
			ks = append(ks, k)
		}
	}
	slices.SortFunc(ks, func(a, b copyKey) int { return cmpU64(a.Region, b.Region) })
	return ks
}

func (h *health) staleCountLocked(id uint64) int { return len(h.staleLocked(id)) }

// current reports whether id is still in generation gen (no transition
// since), and famd is not stopping.
func (h *health) current(id, gen uint64) bool {
	select {
	case <-h.stop:
		return false
	default:
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	sh := h.servers[id]
	return sh != nil && sh.gen == gen
}

// wait sleeps d unless famd stops first.
func (h *health) wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-h.stop:
		return false
	case <-t.C:
		return true
	}
}
