package core

import (
	"fmt"
	"os"
	"sync"

	"github.com/gofam/openfam/core/amo"
	"github.com/gofam/openfam/core/stripe"
	"github.com/gofam/openfam/core/transport"
	"github.com/gofam/openfam/internal/famauth"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// stripedPlane is the data plane of one item of a region placed on memory
// servers: it cuts each request into per-block pieces (package stripe),
// sends every piece to the server holding it at once, and waits for them
// all, so a large transfer runs on every server in parallel with no
// coordinator. The same key is valid on each server, for the item's share
// of that server's segment only. It implements DataPlane; offsets are
// item-relative, as on any data plane.
type stripedPlane struct {
	r      *remote
	lay    stripe.Layout
	base   uint64   // the item's offset in its region
	ids    []uint64 // memory server ids, in interleave order
	starts []uint64 // where the item's share begins in each server's segment
}

// stripes builds the data plane of a placed item from famd's description.
func (r *remote) stripes(ii *pb.ItemInfo) (*stripedPlane, error) {
	ids := ii.GetServers()
	lay := stripe.Layout{Block: ii.GetInterleaveSize(), Servers: len(ids)}
	if !lay.Valid() {
		return nil, Errorf(CodeRPC, "fam_lookup", "famd described an invalid placement: %d servers, interleave size %d", len(ids), ii.GetInterleaveSize())
	}
	p := &stripedPlane{r: r, lay: lay, base: ii.GetOffset(), ids: ids, starts: make([]uint64, len(ids))}
	for j := range ids {
		p.starts[j], _ = lay.Share(ii.GetOffset(), ii.GetSize(), j)
	}
	return p, nil
}

// memClient returns the data-plane client of memory server id, dialling it
// on first use at the address the metadata service announces. Clients are
// shared by every item and live until Finalize.
func (r *remote) memClient(id uint64) (DataPlane, error) {
	r.mmu.Lock()
	defer r.mmu.Unlock()
	if c, ok := r.mems[id]; ok {
		return c, nil
	}
	ctx, cancel := r.ctx()
	defer cancel()
	rep, err := r.cl.Servers(ctx, &pb.ServersRequest{})
	if err := r.famErr("fam_servers", rep.GetErr(), err); err != nil {
		return nil, fmt.Errorf("%w: listing memory servers: %v", transport.ErrUnavailable, err)
	}
	var info *pb.ServerInfo
	for _, s := range rep.GetServers() {
		if s.GetId() == id {
			info = s
		}
	}
	if info == nil {
		return nil, fmt.Errorf("%w: memory server %d is not registered with famd at %s", transport.ErrUnavailable, id, r.addr)
	}
	host, _ := os.Hostname()
	network, addr, token := "tcp", info.GetDataTcp(), r.token
	if r.unix && info.GetDataUnix() != "" && info.GetHostname() == host {
		network, addr, token = "unix", info.GetDataUnix(), ""
	} else if token == "" {
		if r.tokenFile == "" {
			return nil, fmt.Errorf("%w: memory server %d is reached over TCP (%s): set OPENFAM_TOKEN_FILE to the cluster token file", transport.ErrUnavailable, id, addr)
		}
		tok, err := famauth.ReadToken(r.tokenFile)
		if err != nil {
			return nil, fmt.Errorf("%w: memory server %d: %v", transport.ErrUnavailable, id, err)
		}
		r.token, token = tok, tok
	}
	tc, err := transport.Dial(network, addr, transport.ClientOptions{Token: token, Timeout: r.timeout, Spin: r.spin})
	if err != nil {
		return nil, fmt.Errorf("%w: memory server %d at %s: %v", transport.ErrUnavailable, id, addr, err)
	}
	// A fabric plane when the server runs a libfabric provider (fabricplane.go).
	c, err := r.fab.plane(fmt.Sprintf("memory server %d", id), info.GetProvider(), info.GetFabricAddr(), tc)
	if err != nil {
		return nil, err
	}
	if r.mems == nil {
		r.mems = map[uint64]DataPlane{}
	}
	r.mems[id] = c
	return c, nil
}

// forgetMems closes the memory servers' clients, so that the next use
// dials again at the addresses the metadata service announces then.
func (r *remote) forgetMems() {
	r.mmu.Lock()
	defer r.mmu.Unlock()
	for _, c := range r.mems {
		c.Close()
	}
	r.mems = nil
}

// StripedTransfer starts moving buf into (write) or out of bytes [off,
// off+len(buf)) of an item that starts at region byte base of a region laid
// out by lay, whose share on server j begins at starts[j]: one request per
// piece, on the data-plane client that client(j) returns, all in flight at
// once. The Call groups them; a server whose client cannot be had fails
// its pieces only. Clients (stripedPlane) and famd's metadata service
// (backup and restore) both move striped bytes through it.
func StripedTransfer[C DataPlane](lay stripe.Layout, base uint64, starts []uint64, key transport.Key, off uint64, buf []byte, write bool,
	client func(j int) (C, error)) *transport.Call {
	var calls []*transport.Call
	lay.Pieces(base, starts, off, uint64(len(buf)), func(pc stripe.Piece) {
		c, err := client(pc.Server)
		if err != nil {
			calls = append(calls, transport.DoneCall(err))
			return
		}
		b := buf[pc.Buf : pc.Buf+pc.Len]
		if write {
			calls = append(calls, c.PutAsync(key, pc.Off, b))
		} else {
			calls = append(calls, c.GetAsync(key, pc.Off, b))
		}
	})
	return transport.Group(calls...)
}

func (p *stripedPlane) client(j int) (DataPlane, error) { return p.r.memClient(p.ids[j]) }

// GetAsync implements DataPlane.
func (p *stripedPlane) GetAsync(key transport.Key, off uint64, dst []byte) *transport.Call {
	return StripedTransfer(p.lay, p.base, p.starts, key, off, dst, false, p.client)
}

// PutAsync implements DataPlane.
func (p *stripedPlane) PutAsync(key transport.Key, off uint64, src []byte) *transport.Call {
	return StripedTransfer(p.lay, p.base, p.starts, key, off, src, true, p.client)
}

// Get implements DataPlane.
func (p *stripedPlane) Get(key transport.Key, off uint64, dst []byte) error {
	if c, soff, ok := p.within(off, len(dst)); ok {
		return c.Get(key, soff, dst)
	}
	return p.GetAsync(key, off, dst).Wait()
}

// Put implements DataPlane.
func (p *stripedPlane) Put(key transport.Key, off uint64, src []byte) error {
	if c, soff, ok := p.within(off, len(src)); ok {
		return c.Put(key, soff, src)
	}
	return p.PutAsync(key, off, src).Wait()
}

// within returns the client of the server holding n bytes at item offset
// off and their offset in the item's share there, when they lie in one
// interleave block: a blocking call then makes one blocking request, read
// by the caller itself, as on an unstriped item, instead of the queued
// request and the hand-over to the connection's reader that a multi-piece
// transfer needs.
func (p *stripedPlane) within(off uint64, n int) (DataPlane, uint64, bool) {
	j, soff, run := p.lay.Locate(p.base + off)
	if n <= 0 || uint64(n) > run {
		return nil, 0, false
	}
	c, err := p.r.memClient(p.ids[j])
	if err != nil {
		return nil, 0, false // the multi-piece path reports it
	}
	return c, soff - p.starts[j], true
}

// GatherIndexed implements DataPlane: one indexed request per server when
// every element lies within one block at a share offset that is a
// multiple of esize (the usual case: aligned items, power-of-two
// elements), else one request per element piece, all in flight at once.
func (p *stripedPlane) GatherIndexed(key transport.Key, dst []byte, index []uint64, esize uint64) error {
	return p.indexed(key, dst, index, esize, true)
}

// ScatterIndexed implements DataPlane; see GatherIndexed.
func (p *stripedPlane) ScatterIndexed(key transport.Key, src []byte, index []uint64, esize uint64) error {
	return p.indexed(key, src, index, esize, false)
}

func (p *stripedPlane) indexed(key transport.Key, buf []byte, index []uint64, esize uint64, gather bool) error {
	if esize == 0 || uint64(len(buf))/esize < uint64(len(index)) {
		return &transport.Error{Code: int32(CodeInvalid), Msg: "buffer smaller than the element list"}
	}
	type group struct {
		idx, pos []uint64
	}
	groups := make([]group, len(p.ids))
	for i, e := range index {
		j, soff, run := p.lay.Locate(p.base + e*esize)
		so := soff - p.starts[j]
		if run < esize || so%esize != 0 {
			return p.elementwise(key, buf, index, esize, gather)
		}
		groups[j].idx = append(groups[j].idx, so/esize)
		groups[j].pos = append(groups[j].pos, uint64(i))
	}
	var wg sync.WaitGroup
	errs := make([]error, len(groups))
	for j := range groups {
		g := groups[j]
		if len(g.idx) == 0 {
			continue
		}
		c, err := p.r.memClient(p.ids[j])
		if err != nil {
			errs[j] = err
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			tmp := make([]byte, uint64(len(g.idx))*esize)
			if gather {
				if errs[j] = c.GatherIndexed(key, tmp, g.idx, esize); errs[j] == nil {
					for k, i := range g.pos {
						copy(buf[i*esize:(i+1)*esize], tmp[uint64(k)*esize:])
					}
				}
				return
			}
			for k, i := range g.pos {
				copy(tmp[uint64(k)*esize:], buf[i*esize:(i+1)*esize])
			}
			errs[j] = c.ScatterIndexed(key, tmp, g.idx, esize)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// elementwise moves each element with its own get or put pieces, all
// pipelined.
func (p *stripedPlane) elementwise(key transport.Key, buf []byte, index []uint64, esize uint64, gather bool) error {
	calls := make([]*transport.Call, len(index))
	for i, e := range index {
		b := buf[uint64(i)*esize : uint64(i+1)*esize]
		if gather {
			calls[i] = p.GetAsync(key, e*esize, b)
		} else {
			calls[i] = p.PutAsync(key, e*esize, b)
		}
	}
	return transport.Group(calls...).Wait()
}

// Atomic implements DataPlane: the server holding the word does it.
func (p *stripedPlane) Atomic(key transport.Key, off uint64, kind amo.Kind, op amo.Op, v, cmp amo.Value, fetch bool) (amo.Value, error) {
	j, soff, run := p.lay.Locate(p.base + off)
	if run < kind.Size() {
		return amo.Value{}, &transport.Error{Code: int32(CodeInvalid), Msg: fmt.Sprintf("the %d-byte word at offset %d straddles two interleave blocks", kind.Size(), off)}
	}
	c, err := p.r.memClient(p.ids[j])
	if err != nil {
		return amo.Value{}, err
	}
	return c.Atomic(key, soff-p.starts[j], kind, op, v, cmp, fetch)
}

// AtomicAsync issues a non-fetching atomic to the server holding the word
// (see transport.Client.AtomicAsync).
func (p *stripedPlane) AtomicAsync(key transport.Key, off uint64, kind amo.Kind, op amo.Op, v amo.Value) *transport.Call {
	j, soff, run := p.lay.Locate(p.base + off)
	if run < kind.Size() {
		return transport.DoneCall(&transport.Error{Code: int32(CodeInvalid), Msg: fmt.Sprintf("the %d-byte word at offset %d straddles two interleave blocks", kind.Size(), off)})
	}
	c, err := p.r.memClient(p.ids[j])
	if err != nil {
		return transport.DoneCall(err)
	}
	return atomicAsyncOn(c, key, soff-p.starts[j], kind, op, v)
}

// OpenFD implements DataPlane: an interleaved item has no single file to
// map.
func (p *stripedPlane) OpenFD(transport.Key) (*os.File, uint64, uint64, uint8, error) {
	return nil, 0, 0, 0, &transport.Error{Code: int32(CodeUnimplemented), Msg: "an item interleaved over memory servers cannot be mapped"}
}

// Close implements DataPlane; the memory servers' clients are shared and
// closed with the instance.
func (p *stripedPlane) Close() error { return nil }

// relayCopyChunk bounds the buffer a client-side copy uses.
const relayCopyChunk = 4 << 20

// relayCopy copies between items through this process when at least one
// of them is on memory servers: chunk by chunk, backwards when the ranges
// overlap within one item with the destination above the source, so the
// result is that of memmove.
func (c *Context) relayCopy(op string, src *Item, srcOff uint64, dst *Item, dstOff, n uint64) error {
	buf := make([]byte, min(n, relayCopyChunk))
	backwards := src.g == dst.g && dstOff > srcOff && dstOff < srcOff+n
	for done := uint64(0); done < n; {
		m := min(uint64(len(buf)), n-done)
		at := done
		if backwards {
			at = n - done - m
		}
		if err := c.transfer(op, buf[:m], src, srcOff+at, false); err != nil {
			return err
		}
		if err := c.transfer(op, buf[:m], dst, dstOff+at, true); err != nil {
			return err
		}
		done += m
	}
	return nil
}

var _ DataPlane = (*stripedPlane)(nil)
