package rpc

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/memserver"
	"github.com/gofam/openfam/core/metadata"
	"github.com/gofam/openfam/core/stripe"
	"github.com/gofam/openfam/core/transport"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// Redundant regions (issue 16; spec/cluster.md "Redundancy"): the
// metadata service's side. It places a RAID1 region on >= 2 memory
// servers and a RAID5 region on >= 3, makes on each server a data
// segment and a mirror or parity segment, tells each server the
// region's redundancy, its place in it, its peers and the peer key the
// servers present to each other (never to clients), and grants clients
// the item's share on each server (and, for RAID1, on the mirrors).

// geometry is the arithmetic of a region's data segments.
type geometry interface {
	SegmentSize(size uint64) uint64
	Share(a, n uint64, j int) (start, end uint64)
}

// geometryOf is the data layout of region rec.
func geometryOf(rec metadata.Region) geometry {
	if core.Redundancy(rec.Redundancy) == core.RAID5 {
		return stripe.Parity{Block: rec.InterleaveSize, Servers: len(rec.Servers)}
	}
	return layoutOf(rec)
}

func redundant(rec metadata.Region) bool {
	return core.Redundancy(rec.Redundancy) == core.RAID1 || core.Redundancy(rec.Redundancy) == core.RAID5
}

// minServers is how many memory servers a redundancy level needs.
func minServers(r core.Redundancy) int {
	switch r {
	case core.RAID1:
		return 2
	case core.RAID5:
		return 3
	}
	return 1
}

// placeRedundant checks that a region asking for redundancy can have it
// on the servers ids (nil: none has joined): its servers are every one.
func (c *Cluster) placeRedundant(attr core.RegionAttr, ids []uint64) ([]uint64, uint64, error) {
	name := map[core.Redundancy]string{core.RAID1: "RAID1", core.RAID5: "RAID5"}[attr.Redundancy]
	need := minServers(attr.Redundancy)
	if attr.Interleave == core.InterleaveDisable {
		return nil, 0, fmt.Errorf("redundancy %s spreads a region over %d or more memory servers: it cannot be combined with interleaving disabled", name, need)
	}
	if len(ids) < need {
		return nil, 0, fmt.Errorf("redundancy %s needs at least %d memory servers; %d joined this metadata service", name, need, len(ids))
	}
	return ids, c.opts.InterleaveSize, nil
}

// raidSecretFile holds the secret peer keys are derived from, so that a
// restarted metadata service hands memory servers the same keys.
const raidSecretFile = "raid.secret"

// peerKey is region id's peer key: an HMAC of its id under the secret
// kept in DataDir/raid.secret (made on first use).
func (c *Cluster) peerKey(id uint64) ([]byte, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if c.raidSecret == nil {
		path := filepath.Join(c.opts.DataDir, raidSecretFile)
		b, err := os.ReadFile(path)
		switch {
		case err == nil:
			if c.raidSecret, err = hex.DecodeString(strings.TrimSpace(string(b))); err != nil || len(c.raidSecret) < 16 {
				return nil, fmt.Errorf("%s is malformed", path)
			}
		case errors.Is(err, os.ErrNotExist):
			sec := make([]byte, 32)
			_, _ = rand.Read(sec)
			tmp := path + ".tmp"
			if err := os.WriteFile(tmp, []byte(hex.EncodeToString(sec)+"\n"), 0o600); err != nil {
				return nil, err
			}
			if err := os.Rename(tmp, path); err != nil {
				return nil, err
			}
			c.raidSecret = sec
		default:
			return nil, err
		}
	}
	m := hmac.New(sha256.New, c.raidSecret)
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], id)
	m.Write(b[:])
	return m.Sum(nil)[:16], nil
}

// segFor describes region rec's data segment on its j-th server: with
// the region's redundancy, peers and peer key when it has some.
func (c *Cluster) segFor(rec metadata.Region, j int) (*pb.Segment, error) {
	seg := segmentOf(rec)
	if !redundant(rec) {
		return seg, nil
	}
	capa := core.Capacity(rec)
	seg.Size = geometryOf(rec).SegmentSize(capa)
	seg.Redundancy = uint32(rec.Redundancy)
	seg.Index = uint32(j)
	seg.Block = rec.InterleaveSize
	seg.RedundantSize = seg.Size
	if core.Redundancy(rec.Redundancy) == core.RAID5 {
		seg.RedundantSize = stripe.Parity{Block: rec.InterleaveSize, Servers: len(rec.Servers)}.ParitySegmentSize(capa)
	}
	k, err := c.peerKey(rec.ID)
	if err != nil {
		return nil, err
	}
	seg.PeerKey = k
	ms, err := c.pick(rec.Servers)
	if err != nil {
		return nil, err
	}
	for _, m := range ms {
		seg.Peers = append(seg.Peers, &pb.PeerInfo{Id: m.rec.ID, DataTcp: m.rec.DataTCP, DataUnix: m.rec.DataUnix, Hostname: m.rec.Hostname})
	}
	return seg, nil
}

// segsFor is segFor for every server of rec, or the error of the first.
func (c *Cluster) segsFor(rec metadata.Region) ([]*pb.Segment, error) {
	out := make([]*pb.Segment, len(rec.Servers))
	for j := range out {
		s, err := c.segFor(rec, j)
		if err != nil {
			return nil, err
		}
		out[j] = s
	}
	return out, nil
}

// grantRequest is the grant of key on rec's j-th server for placement p,
// nil when that server holds none of the item.
func grantRequest(p core.Placement, seg *pb.Segment, key transport.Key, j int, epoch []byte) *pb.GrantRequest {
	g := geometryOf(p.Region)
	s, e := g.Share(p.Offset, p.Size, j)
	req := &pb.GrantRequest{Segment: seg, Key: key[:], Start: s, End: e, Rights: uint32(p.Rights), Epoch: epoch}
	switch core.Redundancy(p.Region.Redundancy) {
	case core.RAID1:
		req.MirrorStart, req.MirrorEnd = g.Share(p.Offset, p.Size, stripe.MirroredBy(j, len(p.Region.Servers)))
		if s == e && req.MirrorStart == req.MirrorEnd {
			return nil
		}
	case core.RAID5:
		// Every server may reconstruct a dead one's share: each knows the
		// item's share on all.
		for i := range p.Region.Servers {
			a, b := g.Share(p.Offset, p.Size, i)
			req.ShareStarts, req.ShareEnds = append(req.ShareStarts, a), append(req.ShareEnds, b)
		}
	default:
		if s == e {
			return nil
		}
	}
	return req
}

// zeroMirrors clears the mirror copies of region bytes [off, off+n) of a
// RAID1 region (RAID5 data servers keep their parity exact themselves).
func (c *Cluster) zeroMirrors(rec metadata.Region, off, n uint64) error {
	if core.Redundancy(rec.Redundancy) != core.RAID1 {
		return nil
	}
	segs, err := c.segsFor(rec)
	if err != nil {
		return err
	}
	lay := layoutOf(rec)
	k := len(rec.Servers)
	return c.onServers(rec.Servers, func(ctx context.Context, j int, m *member) (*pb.Reply, error) {
		s, e := lay.Share(off, n, stripe.MirroredBy(j, k))
		if s == e {
			return &pb.Reply{}, nil
		}
		seg := &pb.Segment{RegionId: rec.ID, Size: segs[j].GetRedundantSize(), Persistent: segs[j].GetPersistent(),
			Kind: memserver.KindMirror, Redundancy: segs[j].GetRedundancy()}
		return m.cl.Zero(ctx, &pb.ZeroRequest{Segment: seg, Offset: s, Length: e - s})
	})
}

// Rebuild asks memory server id to rebuild its segments of redundant
// region rec from the region's other servers, in the background (the
// membership side calls it for a server that came back or replaced a
// dead one). Progress: RebuildStatus.
func (c *Cluster) Rebuild(rec metadata.Region, id uint64) error {
	if !redundant(rec) {
		return fmt.Errorf("region %d has no redundancy to rebuild from", rec.ID)
	}
	j := -1
	for i, s := range rec.Servers {
		if s == id {
			j = i
		}
	}
	if j < 0 {
		return fmt.Errorf("memory server %d holds none of region %d", id, rec.ID)
	}
	segs, err := c.segsFor(rec)
	if err != nil {
		return err
	}
	// The other servers learn the rebuilt one's addresses now (it may
	// listen elsewhere since it restarted), before it asks them for bytes;
	// one that cannot be reached is down and has its own rebuild coming.
	others := make([]uint64, 0, len(rec.Servers)-1)
	for _, s := range rec.Servers {
		if s != id {
			others = append(others, s)
		}
	}
	if err := c.onServers(others, func(ctx context.Context, i int, m *member) (*pb.Reply, error) {
		k := slices.Index(rec.Servers, m.rec.ID)
		return m.cl.Ensure(ctx, &pb.SegmentRequest{Segment: segs[k]})
	}); err != nil {
		c.logf("famd: telling region %d's servers of memory server %d's addresses: %v", rec.ID, id, err)
	}
	return c.onServers([]uint64{id}, func(ctx context.Context, _ int, m *member) (*pb.Reply, error) {
		return m.cl.Rebuild(ctx, &pb.RebuildRequest{Segment: segs[j]})
	})
}

// RebuildStatus reports the rebuilds memory server id ran or runs since it
// started.
func (c *Cluster) RebuildStatus(id uint64) ([]*pb.RebuildProgress, error) {
	ms, err := c.pick([]uint64{id})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.Timeout)
	defer cancel()
	rep, err := ms[0].cl.RebuildStatus(ctx, &pb.RebuildStatusRequest{})
	if err != nil {
		return nil, fmt.Errorf("memory server %d: %v", id, err)
	}
	return rep.GetRebuilds(), nil
}

// moveRedundant moves bytes of a redundant region through its redundant
// data plane with key (granted on the range), as clients do.
func (c *Cluster) moveRedundant(rec metadata.Region, ms []*member, key transport.Key, off uint64, b []byte, write bool) error {
	dp, err := core.NewRedundantPlane(core.Redundancy(rec.Redundancy), rec.InterleaveSize, off, uint64(len(b)), rec.Servers,
		func(j int) (*transport.Client, error) { return c.dataClient(ms[j]) },
		func(int) bool { return false }, func(int, error) {})
	if err != nil {
		return err
	}
	if write {
		return dp.Put(key, 0, b)
	}
	return dp.Get(key, 0, b)
}

// grantRedundant grants key on every server of a redundant region, as
// grant does, but succeeds with one server unreachable: the region loses
// no byte to one server's death, so a PE may look items up and renew keys
// meanwhile. The unreachable server holds no grant of the key; if it comes
// back, the client's request there is refused as a stale key and the
// client renews its key, which grants it everywhere again.
func (c *Cluster) grantRedundant(p core.Placement, key transport.Key, segs []*pb.Segment) error {
	ms, err := c.pick(p.Region.Servers)
	if err != nil {
		return err
	}
	hard := make([]error, len(ms))
	gone := make([]error, len(ms))
	var wg sync.WaitGroup
	for j, m := range ms {
		req := grantRequest(p, segs[j], key, j, c.epoch)
		if req == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), c.opts.Timeout)
			defer cancel()
			rep, err := m.cl.Grant(ctx, req)
			switch {
			case err != nil:
				gone[j] = fmt.Errorf("memory server %d at %s: %v", m.rec.ID, m.rec.Control, err)
			case rep.GetErr().GetCode() != 0:
				hard[j] = core.Errorf(core.Code(rep.GetErr().GetCode()), "", "memory server %d at %s: %s", m.rec.ID, m.rec.Control, rep.GetErr().GetMsg())
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(hard...); err != nil {
		return errors.Join(err, errors.Join(gone...))
	}
	n := 0
	for _, e := range gone {
		if e != nil {
			n++
		}
	}
	if n > 1 {
		return errors.Join(gone...)
	}
	if n == 1 {
		c.logf("famd: region %d is redundant: key granted without an unreachable server (%v)", p.Region.ID, errors.Join(gone...))
	}
	return nil
}

// Logf logs one line the way the cluster does.
func (c *Cluster) Logf(format string, args ...any) { c.logf(format, args...) }
