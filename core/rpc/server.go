// Package rpc is famd's control plane: the gRPC service openfam.v1.Fam
// (spec/proto/openfam/v1/fam.proto) over a core instance, the identity of
// callers (SO_PEERCRED on Unix sockets; over TCP a cluster token and
// either one configured identity or MUNGE), and the item keys that the
// data plane (package transport) serves.
//
// Every call runs through a view of the instance for the caller's identity
// (core.Fam.As), so the core's permission checks apply unchanged. Domain
// failures travel in each reply's FamError; a gRPC status error means the
// call was not served (not authenticated, cancelled, transport failure).
package rpc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/transport"
	"github.com/gofam/openfam/internal/famauth"
	famversion "github.com/gofam/openfam/internal/version"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// APIVersion is the OpenFAM API version famd implements.
const APIVersion = "3.2.0"

// Options configure a Server.
type Options struct {
	// Fam is the instance served: famd's own, opened on its data
	// directory. The Server does not finalize it.
	Fam *core.Fam
	// Token is the cluster token TCP callers must present; "" refuses
	// every caller that is not on a Unix socket.
	Token string
	// Auth says who a TCP caller is: famauth.ModeToken (or "") makes
	// every caller holding the token TCPIdentity; famauth.ModeMunge makes
	// each caller the uid and gid of the MUNGE credential it answers
	// famd's challenge with, once per connection. Unix socket callers are
	// always who the kernel says.
	Auth string
	// TCPIdentity is the identity of every TCP caller with Auth token;
	// nil means famd's own uid and gid.
	TCPIdentity *Identity
	// MungeSocket is munged's socket for Auth munge ("" for libmunge's
	// default).
	MungeSocket string
	// ServerToken is the credential memory servers prove they hold when
	// they Join (famauth.ServerProof); PEs never get it. "" accepts joins
	// only on the Unix socket, from famd's own uid.
	ServerToken string
	// Logf receives debug lines (MUNGE logins); Infof the events an
	// operator follows (regions created and destroyed, client sessions
	// opened and ended); Warnf refused joins and credentials, failed
	// authentications and allocations that found no space. nil is silent.
	Logf, Infof, Warnf func(format string, args ...any)
	// DataTCP and DataUnix are the data-plane addresses announced by Info
	// ("" for none).
	DataTCP, DataUnix string
	// DataDir is announced by Info.
	DataDir string
	// ServerID is this server's id in a cluster (0 for a lone famd).
	ServerID uint32
	// Cluster, when set, is the memory servers this metadata service
	// places regions on (also given to the core as its Placer); it
	// serves Join and Servers. The Server does not close it.
	Cluster *Cluster
	// Observer, when set, is told of every control call answered
	// (famd's metrics); nil costs nothing.
	Observer Observer
	// Fabric, when set, is famd's own libfabric endpoint (famd
	// --provider): Info announces it, and every key revoked is
	// withdrawn from it. Give the same endpoint to the data plane's
	// transport.ServerOptions.Fabric.
	Fabric transport.FabricServer
	// Provider is the data-plane provider Info announces when Fabric is
	// nil (role metadata announces the job's provider though it serves
	// no region bytes); "" means "tcp".
	Provider string
}

// Server implements openfamv1.FamServer, transport.Memory and
// transport.FDSource. All methods are safe for concurrent use.
type Server struct {
	pb.UnimplementedFamServer

	opts     Options
	fam      *core.Fam
	token    string
	auth     string   // famauth.ModeToken or famauth.ModeMunge
	tcpID    identity // every TCP caller's, with auth token
	keys     *keyTable
	sessions *sessions
	barriers *barriers
	start    time.Time
	version  string
	host     string
}

// NewServer returns a Server over opts.Fam. Serve it with a grpc.Server
// made with s.ServerOptions() (which authenticate every call), and give it
// to transport.NewServer as the Memory and FDSource of the data plane.
func NewServer(opts Options) *Server {
	host, _ := os.Hostname()
	version := famversion.String()
	s := &Server{opts: opts, fam: opts.Fam, token: opts.Token, keys: newKeyTableFabric(opts.Fabric), sessions: newSessions(),
		barriers: newBarriers(), start: time.Now(), version: version, host: host,
		auth: famauth.ModeToken, tcpID: identity{uint32(os.Getuid()), uint32(os.Getgid())}}
	if opts.Auth == famauth.ModeMunge {
		s.auth = famauth.ModeMunge
	}
	if opts.TCPIdentity != nil {
		s.tcpID = identity{opts.TCPIdentity.UID, opts.TCPIdentity.GID}
	}
	s.keys.onRevoke = func(e *entry, byHolder bool) {
		if e.servers != nil && opts.Cluster != nil {
			opts.Cluster.revoke(e.servers, e.key)
		}
		if e.session != 0 && !byHolder && !e.quietRevoke() {
			s.sessions.notify(e.session, e.key)
		}
	}
	s.wireHealth()
	return s
}

// Drain releases every PE waiting in Barrier with a CodeRPC error and
// makes later Barrier calls fail the same way, and ends every client
// session stream, so that a graceful stop of the gRPC server does not wait
// for barriers that cannot complete or clients that stay.
func (s *Server) Drain() {
	s.barriers.drain()
	// Session streams last as long as their clients: end them, or a
	// graceful stop would wait for every client to go away.
	s.sessions.drain()
}

// Close drains the barriers and revokes every key, releasing the
// server-side item handles. Call it after the gRPC and data servers
// stopped and before finalizing the instance.
func (s *Server) Close() {
	s.barriers.drain()
	s.keys.closeAll()
}

// RegionCount counts every region of the instance, whatever its
// permissions (for famd's startup log).
func (s *Server) RegionCount() (int, error) {
	ids, err := regionIDs(s.fam)
	return len(ids), err
}

// Keys returns how many item keys are live (for logs and tests).
func (s *Server) Keys() int { return s.keys.len() }

// view returns the instance as seen by the caller the interceptor
// authenticated.
func (s *Server) view(ctx context.Context) (*core.Fam, identity) {
	id, ok := ctx.Value(identityKey{}).(identity)
	if !ok {
		// Unreachable through the interceptor; a call that bypassed it gets
		// an identity that owns nothing.
		id = identity{uid: 1<<32 - 2, gid: 1<<32 - 2}
	}
	return s.fam.As(id.uid, id.gid), id
}

// logf writes a debug line to Options.Logf.
func (s *Server) logf(format string, args ...any) {
	if s.opts.Logf != nil {
		s.opts.Logf(format, args...)
	}
}

// infof writes an event to Options.Infof.
func (s *Server) infof(format string, args ...any) {
	if s.opts.Infof != nil {
		s.opts.Infof(format, args...)
	}
}

// peerName says where a call came from, for log lines: the TCP address,
// or "unix socket".
func peerName(ctx context.Context) string {
	p, ok := peer.FromContext(ctx)
	switch {
	case !ok || p.Addr == nil:
		return "?"
	case onUnixSocket(ctx):
		return "unix socket"
	}
	return p.Addr.String()
}

// warnf writes a warning to Options.Warnf.
func (s *Server) warnf(format string, args ...any) {
	if s.opts.Warnf != nil {
		s.opts.Warnf(format, args...)
	}
}

// famErr turns a core error into the wire's FamError (nil for nil).
func famErr(err error) *pb.FamError {
	if err == nil {
		return nil
	}
	var ce *core.Error
	if errors.As(err, &ce) {
		return &pb.FamError{Code: int32(ce.Code), Op: ce.Op, Msg: ce.Msg}
	}
	return &pb.FamError{Code: int32(core.CodeOf(err)), Msg: err.Error()}
}

func errf(code core.Code, op, format string, args ...any) *pb.FamError {
	return famErr(core.Errorf(code, op, format, args...))
}

// entryFor returns the live entry of a key the caller was issued.
func (s *Server) entryFor(id identity, op string, b []byte) (*entry, *pb.FamError) {
	var k transport.Key
	if len(b) != len(k) {
		return nil, errf(core.CodeInvalid, op, "malformed data item key (%d bytes, want %d)", len(b), len(k))
	}
	copy(k[:], b)
	e, ok := s.keys.get(k)
	// A key is the capability of the identity it was issued to; another
	// caller presenting it is treated as if it did not exist.
	if !ok || e.id != id {
		return nil, errf(core.CodeNoPerm, op, "unknown or revoked data item key: resolve the item again")
	}
	return e, nil
}

// region opens a handle on region id through f; the caller closes it.
func region(f *core.Fam, id uint64) (*core.Region, error) {
	return f.RegionFromGlobal(core.GlobalDesc{RegionID: id, Offset: core.RegionOffset})
}

// withRegion runs fn on a transient handle of region id.
func withRegion(f *core.Fam, id uint64, fn func(r *core.Region) error) error {
	r, err := region(f, id)
	if err != nil {
		return err
	}
	defer r.Close()
	return fn(r)
}

func attrPB(a core.RegionAttr) *pb.RegionAttr {
	return &pb.RegionAttr{Redundancy: uint32(a.Redundancy), Memory: uint32(a.Memory),
		Interleave: uint32(a.Interleave), PermLevel: uint32(a.PermLevel)}
}

// regionInfo describes r. Its usage comes from the core's running count,
// not from listing the items: a region may hold millions.
func regionInfo(r *core.Region) (*pb.RegionInfo, error) {
	st, err := r.Stat()
	if err != nil {
		return nil, err
	}
	g, err := r.Global()
	if err != nil {
		return nil, err
	}
	used, err := r.Used()
	if err != nil {
		return nil, err
	}
	return &pb.RegionInfo{Id: g.RegionID, Name: st.Name, Size: st.Size, Mode: st.Mode, Uid: st.UID, Gid: st.GID,
		Attr: attrPB(st.Attr), InterleaveSize: st.InterleaveSize, Servers: st.Servers, Used: used}, nil
}

func (s *Server) regionReply(r *core.Region, err error) (*pb.RegionReply, error) {
	if err != nil {
		return &pb.RegionReply{Err: famErr(err)}, nil
	}
	defer r.Close()
	ri, err := regionInfo(r)
	if err != nil {
		return &pb.RegionReply{Err: famErr(err)}, nil
	}
	s.describeRegion(ri)
	return &pb.RegionReply{Region: ri}, nil
}

// Info reports the server's version, addresses and the usage of the
// regions the caller may see.
func (s *Server) Info(ctx context.Context, _ *pb.InfoRequest) (*pb.InfoReply, error) {
	f, _ := s.view(ctx)
	rep := &pb.InfoReply{Version: APIVersion, ServerVersion: s.version, DataTcp: s.opts.DataTCP,
		DataUnix: s.opts.DataUnix, DataDir: s.opts.DataDir, UptimeNs: uint64(time.Since(s.start)),
		ServerId: s.opts.ServerID, Hostname: s.host, Persist: persistName(s.fam)}
	rep.Provider, rep.FabricAddr = fabricInfo(s.opts.Fabric, s.opts.Provider)
	// Usage is informative: Info must answer even when listing fails, as
	// clients call it first to find the data plane.
	regions, _ := s.visibleRegions(f)
	for _, r := range regions {
		rep.Regions++
		rep.BytesTotal += r.Size
		rep.BytesUsed += r.Used
	}
	return rep, nil
}

// CreateRegion creates a region owned by the caller.
func (s *Server) CreateRegion(ctx context.Context, req *pb.CreateRegionRequest) (*pb.RegionReply, error) {
	f, id := s.view(ctx)
	a := req.GetAttr()
	attr := core.RegionAttr{Redundancy: core.Redundancy(a.GetRedundancy()), Memory: core.MemoryType(a.GetMemory()),
		Interleave: core.Interleave(a.GetInterleave()), PermLevel: core.PermLevel(a.GetPermLevel())}
	r, err := f.CreateRegion(req.GetName(), req.GetSize(), req.GetMode(), attr)
	if err == nil {
		kind := "volatile"
		if st, serr := r.Stat(); serr == nil && st.Attr.Memory == core.Persistent {
			kind = "persistent"
		}
		s.infof("region %q created: %d bytes, mode %04o, %s, by uid %d gid %d (%s)",
			req.GetName(), req.GetSize(), req.GetMode(), kind, id.uid, id.gid, peerName(ctx))
	} else if core.CodeOf(err) == core.CodeNoSpace {
		s.warnf("no space for region %q of %d bytes (uid %d): %v", req.GetName(), req.GetSize(), id.uid, err)
	}
	return s.regionReply(r, err)
}

// LookupRegion finds a region by name (the caller needs read or write
// permission).
func (s *Server) LookupRegion(ctx context.Context, req *pb.LookupRegionRequest) (*pb.RegionReply, error) {
	f, _ := s.view(ctx)
	return s.regionReply(f.LookupRegion(req.GetName()))
}

// RegionByID describes a region by id (the caller needs read or write
// permission).
func (s *Server) RegionByID(ctx context.Context, req *pb.RegionByIDRequest) (*pb.RegionReply, error) {
	f, _ := s.view(ctx)
	return s.regionReply(region(f, req.GetId()))
}

// DestroyRegion destroys a region; every key of its items is revoked.
func (s *Server) DestroyRegion(ctx context.Context, req *pb.RegionByIDRequest) (*pb.Reply, error) {
	f, id := s.view(ctx)
	var name string
	err := withRegion(f, req.GetId(), func(r *core.Region) error {
		name = r.Name()
		return r.Destroy()
	})
	if err == nil {
		s.infof("region %q (id %d) destroyed by uid %d gid %d (%s)", name, req.GetId(), id.uid, id.gid, peerName(ctx))
	}
	return &pb.Reply{Err: famErr(err)}, nil
}

// ResizeRegion resizes a region; keys of its items are revoked (the
// mapping moved), holders resolve them again.
func (s *Server) ResizeRegion(ctx context.Context, req *pb.ResizeRegionRequest) (*pb.Reply, error) {
	f, _ := s.view(ctx)
	return &pb.Reply{Err: famErr(withRegion(f, req.GetId(), func(r *core.Region) error { return r.Resize(req.GetSize()) }))}, nil
}

// ChangeRegionPermissions sets a region's mode; keys of its items are
// revoked.
func (s *Server) ChangeRegionPermissions(ctx context.Context, req *pb.ChangeRegionPermissionsRequest) (*pb.Reply, error) {
	f, _ := s.view(ctx)
	return &pb.Reply{Err: famErr(withRegion(f, req.GetId(), func(r *core.Region) error { return r.ChangePermissions(req.GetMode()) }))}, nil
}

// visibleRegions describes every region the caller may read or write.
func (s *Server) visibleRegions(f *core.Fam) ([]*pb.RegionInfo, error) {
	ids, err := regionIDs(f)
	if err != nil {
		return nil, err
	}
	var out []*pb.RegionInfo
	for _, id := range ids {
		// A region without permission, or destroyed since the listing, is
		// simply not visible.
		_ = withRegion(f, id, func(r *core.Region) error {
			ri, err := regionInfo(r)
			if err == nil {
				s.describeRegion(ri)
				out = append(out, ri)
			}
			return err
		})
	}
	return out, nil
}

// ListRegions lists the regions the caller may read or write.
func (s *Server) ListRegions(ctx context.Context, _ *pb.ListRegionsRequest) (*pb.ListRegionsReply, error) {
	f, _ := s.view(ctx)
	rs, err := s.visibleRegions(f)
	return &pb.ListRegionsReply{Err: famErr(err), Regions: rs}, nil
}

// issue registers a key for an item handle just opened for id and
// answers with its description.
func (s *Server) issue(ctx context.Context, id identity, it *core.Item, err error) (*pb.ItemReply, error) {
	if err != nil {
		return &pb.ItemReply{Err: famErr(err)}, nil
	}
	sid := s.sessionOf(ctx)
	e := s.keys.add(it, id, sid)
	if sid != 0 && !s.sessions.isLive(sid) {
		// The session ended while the key was being made: its sweep may
		// have missed this one.
		s.keys.revoke(e)
		return &pb.ItemReply{Err: errf(core.CodeRPC, "fam_lookup", "the client's session with famd ended")}, nil
	}
	if p, ok := it.Placement(); ok {
		// The key must work on every memory server before the client gets
		// it; revoking it withdraws it from the same servers.
		if s.opts.Cluster == nil {
			s.keys.revoke(e)
			return &pb.ItemReply{Err: errf(core.CodeResource, "fam_lookup", "data item {%d, %d} is on memory servers, but this famd has no cluster", p.Region.ID, p.Offset)}, nil
		}
		e.servers = p.Region.Servers
		if err := s.opts.Cluster.grant(p, e.key); err != nil {
			s.keys.revoke(e)
			return &pb.ItemReply{Err: errf(core.CodeRPC, "fam_lookup", "granting access on memory servers: %v", err)}, nil
		}
	}
	info, err := itemInfo(e)
	if err != nil {
		s.keys.revoke(e)
		return &pb.ItemReply{Err: famErr(err)}, nil
	}
	return &pb.ItemReply{Item: info}, nil
}

// itemInfo describes an issued key's item, with the key and the holder's
// rights.
func itemInfo(e *entry) (*pb.ItemInfo, error) {
	st, err := e.it.Stat()
	if err != nil {
		return nil, err
	}
	g, err := e.it.Global()
	if err != nil {
		return nil, err
	}
	inc, err := e.it.Incarnation()
	if err != nil {
		return nil, err
	}
	_, _, rights, ok := e.it.Local()
	var redundancy uint32
	if p, placed := e.it.Placement(); placed {
		rights, ok = p.Rights, true
		redundancy = uint32(p.Region.Redundancy) // issue 16: clients pick the redundant data plane
	}
	if !ok {
		return nil, core.Errorf(core.CodeNotFound, "fam_stat", "data item {%d, %d} is no longer available", g.RegionID, g.Offset)
	}
	return &pb.ItemInfo{RegionId: g.RegionID, Offset: g.Offset, Size: st.Size, Name: st.Name, Mode: st.Mode,
		Uid: st.UID, Gid: st.GID, Rights: uint32(rights), Key: append([]byte(nil), e.key[:]...),
		InterleaveSize: st.InterleaveSize, Servers: st.Servers, Incarnation: inc, MemoryType: memoryType(e.it),
		Redundancy: redundancy}, nil
}

// Allocate allocates an item in a region and issues its key.
func (s *Server) Allocate(ctx context.Context, req *pb.AllocateRequest) (*pb.ItemReply, error) {
	f, id := s.view(ctx)
	var it *core.Item
	err := withRegion(f, req.GetRegionId(), func(r *core.Region) error {
		var err error
		it, err = r.Allocate(req.GetName(), req.GetSize(), req.GetMode())
		return err
	})
	if core.CodeOf(err) == core.CodeNoSpace {
		s.warnf("no space for item %q of %d bytes in region %d (uid %d): %v", req.GetName(), req.GetSize(), req.GetRegionId(), id.uid, err)
	}
	return s.issue(ctx, id, it, err)
}

// Lookup finds an item by name and issues its key.
func (s *Server) Lookup(ctx context.Context, req *pb.LookupRequest) (*pb.ItemReply, error) {
	f, id := s.view(ctx)
	it, err := f.Lookup(req.GetItem(), req.GetRegion())
	return s.issue(ctx, id, it, err)
}

// ItemAt resolves a global descriptor (after a restart, or after a key
// was revoked) and issues a key with the caller's current rights.
func (s *Server) ItemAt(ctx context.Context, req *pb.ItemAtRequest) (*pb.ItemReply, error) {
	f, id := s.view(ctx)
	it, err := f.ItemFromGlobal(core.GlobalDesc{RegionID: req.GetRegionId(), Offset: req.GetOffset()})
	if err == nil {
		// The descriptor resolves lazily; Stat resolves it now so that a
		// missing item or a denied caller gets no key.
		if _, err = it.Stat(); err != nil {
			_ = it.Close()
		}
	}
	return s.issue(ctx, id, it, err)
}

// CloseItem forgets a key and releases its server-side handle. Closing an
// unknown or already revoked key succeeds: there is nothing to release.
func (s *Server) CloseItem(ctx context.Context, req *pb.KeyRequest) (*pb.Reply, error) {
	_, id := s.view(ctx)
	e, fe := s.entryFor(id, "fam_close", req.GetKey())
	if fe != nil {
		if fe.Code == int32(core.CodeNoPerm) {
			fe = nil
		}
		return &pb.Reply{Err: fe}, nil
	}
	if e.session != 0 && s.sessionOf(ctx) == e.session {
		// The session closing its own key needs no event about it.
		s.keys.release(e)
	} else {
		s.keys.revoke(e)
	}
	return &pb.Reply{}, nil
}

// Deallocate frees the key's item; every key of it is revoked.
func (s *Server) Deallocate(ctx context.Context, req *pb.KeyRequest) (*pb.Reply, error) {
	_, id := s.view(ctx)
	e, fe := s.entryFor(id, "fam_deallocate", req.GetKey())
	if fe != nil {
		return &pb.Reply{Err: fe}, nil
	}
	// The session deallocating through its own key is not told that the
	// key is revoked: a successful fam_deallocate releases every handle
	// of the item in the calling instance itself (core's remote.deallocate
	// drops the event anyway), and the event cost both sides a gRPC
	// stream write and read plus an HTTP/2 ping exchange, a handful of
	// goroutine wake-ups on the control path's critical cores: about a
	// fifth of famd's CPU for an allocate+deallocate pair (issue 19).
	// Other keys of the item, of this session or others, are told as
	// before. If the deallocation fails, a revocation that happened
	// meanwhile (a concurrent permission change) is told now.
	own := e.session != 0 && s.sessionOf(ctx) == e.session
	if own {
		e.quiet.Store(quietOn)
	}
	err := e.it.Deallocate()
	if own && e.quiet.Swap(quietOff) == quietSuppressed && err != nil {
		s.sessions.notify(e.session, e.key)
	}
	return &pb.Reply{Err: famErr(err)}, nil
}

// ChangeItemPermissions sets the key's item mode; every key of it is
// revoked and holders resolve the item again to get their new rights.
func (s *Server) ChangeItemPermissions(ctx context.Context, req *pb.ChangeItemPermissionsRequest) (*pb.Reply, error) {
	_, id := s.view(ctx)
	e, fe := s.entryFor(id, "fam_change_permissions", req.GetKey())
	if fe != nil {
		return &pb.Reply{Err: fe}, nil
	}
	return &pb.Reply{Err: famErr(e.it.ChangePermissions(req.GetMode()))}, nil
}

// StatItem describes the key's item (the same key is returned).
func (s *Server) StatItem(ctx context.Context, req *pb.KeyRequest) (*pb.ItemReply, error) {
	_, id := s.view(ctx)
	e, fe := s.entryFor(id, "fam_stat", req.GetKey())
	if fe != nil {
		return &pb.ItemReply{Err: fe}, nil
	}
	info, err := itemInfo(e)
	return &pb.ItemReply{Err: famErr(err), Item: info}, nil
}

// ListItems lists the items of a region the caller may read or write,
// without keys; rights are what the caller would get.
func (s *Server) ListItems(ctx context.Context, req *pb.ListItemsRequest) (*pb.ListItemsReply, error) {
	f, id := s.view(ctx)
	rep := &pb.ListItemsReply{}
	err := withRegion(f, req.GetRegionId(), func(r *core.Region) error {
		rst, err := r.Stat()
		if err != nil {
			return err
		}
		items, err := regionItems(r)
		if err != nil {
			return err
		}
		offs := make([]uint64, 0, len(items))
		for off := range items {
			offs = append(offs, off)
		}
		slices.Sort(offs)
		for _, off := range offs {
			st := items[off]
			mode, uid, gid := st.Mode, st.UID, st.GID
			if rst.Attr.PermLevel != core.PermDataItem {
				mode, uid, gid = rst.Mode, rst.UID, rst.GID
			}
			rep.Items = append(rep.Items, &pb.ItemInfo{RegionId: req.GetRegionId(), Offset: off, Size: st.Size,
				Name: st.Name, Mode: st.Mode, Uid: st.UID, Gid: st.GID, Rights: rightsFor(mode, uid, gid, id),
				InterleaveSize: rst.InterleaveSize, Servers: rst.Servers})
		}
		return nil
	})
	rep.Err = famErr(err)
	return rep, nil
}

// rightsFor applies the rule the core uses (core's rightsFor): the owner
// may always read and write, as in OpenFAM; anyone else gets the group's
// bits if the gid matches, else the others'.
func rightsFor(mode, ouid, ogid uint32, id identity) uint32 {
	bits := mode
	switch {
	case id.uid == ouid:
		return uint32(core.RightRead | core.RightWrite)
	case id.gid == ogid:
		bits = mode >> 3
	}
	var r uint32
	if bits&4 != 0 {
		r |= uint32(core.RightRead)
	}
	if bits&2 != 0 {
		r |= uint32(core.RightWrite)
	}
	return r
}

// Copy copies between two items at the server.
func (s *Server) Copy(ctx context.Context, req *pb.CopyRequest) (*pb.Reply, error) {
	f, id := s.view(ctx)
	src, fe := s.entryFor(id, "fam_copy", req.GetSrcKey())
	if fe != nil {
		return &pb.Reply{Err: fe}, nil
	}
	dst, fe := s.entryFor(id, "fam_copy", req.GetDstKey())
	if fe != nil {
		return &pb.Reply{Err: fe}, nil
	}
	w, err := f.Default().Copy(src.it, req.GetSrcOffset(), dst.it, req.GetDstOffset(), req.GetNbytes())
	if err == nil {
		err = w.Wait()
	}
	return &pb.Reply{Err: famErr(err)}, nil
}

// Backup writes the key's item to a backup; the reply comes when it is
// complete. Like every backup handler it runs the core as the caller
// (s.view), so the core's rules apply to the caller's identity: the
// backup records the owner and mode governing the item, and its name must
// be free, whoever owns the backup holding it.
func (s *Server) Backup(ctx context.Context, req *pb.BackupRequest) (*pb.Reply, error) {
	f, id := s.view(ctx)
	e, fe := s.entryFor(id, "fam_backup", req.GetKey())
	if fe != nil {
		return &pb.Reply{Err: fe}, nil
	}
	w, err := f.Backup(e.it, req.GetName())
	if err == nil {
		err = w.Wait()
	}
	return &pb.Reply{Err: famErr(err)}, nil
}

// Restore copies a backup into the key's item: read permission on the
// backup and write permission on the item, for the caller.
func (s *Server) Restore(ctx context.Context, req *pb.RestoreRequest) (*pb.Reply, error) {
	f, id := s.view(ctx)
	e, fe := s.entryFor(id, "fam_restore", req.GetKey())
	if fe != nil {
		return &pb.Reply{Err: fe}, nil
	}
	w, err := f.Restore(req.GetName(), e.it)
	if err == nil {
		err = w.Wait()
	}
	return &pb.Reply{Err: famErr(err)}, nil
}

// RestoreNew allocates an item from a backup, fills it and issues its key:
// read permission on the backup and write permission on the region, for
// the caller; the core refuses a mode outside 0777 whatever the client
// library checked.
func (s *Server) RestoreNew(ctx context.Context, req *pb.RestoreNewRequest) (*pb.ItemReply, error) {
	f, id := s.view(ctx)
	var it *core.Item
	err := withRegion(f, req.GetRegionId(), func(r *core.Region) error {
		w, item, err := f.RestoreNew(req.GetName(), r, req.GetItemName(), req.GetMode())
		if err != nil {
			return err
		}
		if err := w.Wait(); err != nil {
			_ = item.Close()
			return err
		}
		it = item
		return nil
	})
	return s.issue(ctx, id, it, err)
}

// DeleteBackup deletes a backup the caller owns or may write.
func (s *Server) DeleteBackup(ctx context.Context, req *pb.BackupNameRequest) (*pb.Reply, error) {
	f, _ := s.view(ctx)
	w, err := f.DeleteBackup(req.GetName())
	if err == nil {
		err = w.Wait()
	}
	return &pb.Reply{Err: famErr(err)}, nil
}

// ListBackups lists the backups whose names start with the request's name
// and that the caller may read.
func (s *Server) ListBackups(ctx context.Context, req *pb.BackupNameRequest) (*pb.ListBackupsReply, error) {
	f, _ := s.view(ctx)
	text, err := f.ListBackups(req.GetName())
	return &pb.ListBackupsReply{Err: famErr(err), Text: text}, nil
}

// Barrier returns once req.Size calls with req.Job arrived; a caller
// whose context ends first leaves the barrier and gets the gRPC status of
// its context.
func (s *Server) Barrier(ctx context.Context, req *pb.BarrierRequest) (*pb.Reply, error) {
	if err := s.barriers.wait(ctx, req.GetJob(), req.GetSize(), req.GetRank()); err != nil {
		var fe *core.Error
		if errors.As(err, &fe) {
			return &pb.Reply{Err: famErr(err)}, nil
		}
		return nil, err
	}
	return &pb.Reply{}, nil
}

// Join registers a memory server (famd --role memory) with this metadata
// service. A memory server receives and serves the bytes of every new
// interleaved region, so joining needs a credential PEs do not hold: with
// a server token (Options.ServerToken), the caller's proof of it
// (famauth.ServerProof over the request), on either socket; without one,
// only famd's own uid on the Unix socket, as the kernel reports it. The
// cluster token alone never suffices. A refusal is FAM_ERR_NOPERM and a
// warning in famd's log.
func (s *Server) Join(ctx context.Context, req *pb.JoinRequest) (*pb.JoinReply, error) {
	_, id := s.view(ctx)
	if s.opts.Cluster == nil {
		return &pb.JoinReply{Err: errf(core.CodeUnimplemented, "famd_join", "this famd takes no memory servers")}, nil
	}
	if why := s.joinRefusal(ctx, id, req); why != "" {
		from := "?"
		if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
			from = p.Addr.String()
		}
		s.warnf("famd: refused a memory server joining from %s (uuid %q, control %s): %s", from, req.GetUuid(), req.GetControl(), why)
		return &pb.JoinReply{Err: errf(core.CodeNoPerm, "famd_join", "%s", why)}, nil
	}
	sid, err := s.opts.Cluster.join(req)
	if err != nil {
		return &pb.JoinReply{Err: errf(core.CodeInvalid, "famd_join", "%v", err)}, nil
	}
	return &pb.JoinReply{ServerId: sid}, nil
}

// joinRefusal says why a Join may not proceed ("" when it may).
func (s *Server) joinRefusal(ctx context.Context, id identity, req *pb.JoinRequest) string {
	if s.opts.ServerToken != "" {
		md, _ := metadata.FromIncomingContext(ctx)
		proof := first(md, famauth.MDServerProof)
		if proof == "" {
			return "no server credential: start the memory famd with --server-token-file, the metadata famd's server token"
		}
		if !famauth.CheckServerProof(s.opts.ServerToken, proof, JoinProofFields(req)...) {
			return "wrong server credential: the memory famd's --server-token-file differs from this famd's"
		}
		return ""
	}
	if !onUnixSocket(ctx) {
		return "this famd has no server token (famd --server-token-file): memory servers may join only on its Unix socket, as its own user"
	}
	if id.uid != uint32(os.Getuid()) {
		return fmt.Sprintf("this famd has no server token (famd --server-token-file): only its own uid %d may join memory servers on its Unix socket, not uid %d", os.Getuid(), id.uid)
	}
	return ""
}

// JoinProofFields are the fields of a join request that a server proof
// covers (famauth.ServerProof), in order: a proof made for one server's
// addresses and secret is worthless for any other.
func JoinProofFields(req *pb.JoinRequest) []string {
	return joinFabricFields([]string{req.GetUuid(), req.GetControl(), req.GetDataTcp(), req.GetDataUnix(), req.GetHostname(), string(req.GetSecret())}, req)
}

// Servers lists the memory servers regions are placed on (empty for a
// famd without any), with their usage when the request asks to probe them.
func (s *Server) Servers(ctx context.Context, req *pb.ServersRequest) (*pb.ServersReply, error) {
	if s.opts.Cluster == nil {
		return &pb.ServersReply{}, nil
	}
	return &pb.ServersReply{Servers: s.opts.Cluster.list(req.GetProbe()), InterleaveSize: s.opts.Cluster.opts.InterleaveSize}, nil
}

// onUnixSocket reports whether the call came over the Unix socket (its
// identity is then the kernel's word).
func onUnixSocket(ctx context.Context) bool {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return false
	}
	_, unix := p.AuthInfo.(PeerCred)
	return unix
}
