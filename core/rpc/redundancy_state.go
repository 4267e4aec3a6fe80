package rpc

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The metadata famd's record of which copies of redundant regions are
// current (issue 16) lives in DataDir/redundancy.db, a bbolt file beside
// cluster.json: the Cluster is made before the core opens its own
// metadata store (it is that store's Placer), and keeping membership
// state out of the catalogue means neither store's lock ever waits on the
// other. The file holds only what is not the normal case, so a famd whose
// servers are all up and current has two empty buckets:
//
//   - servers: a memory server that is down or rebuilding, by id;
//   - copies: a redundant region's copy on a server that is not current
//     (stale, or being rebuilt with its watermark), by region and server.
//
// A copy with no record is current. A stale copy stays stale until a
// rebuild of it finishes, across famd restarts.
var (
	bucketServers = []byte("servers")
	bucketCopies  = []byte("copies")
)

// Copy states kept in copyRecord.State.
const (
	copyStale      = "stale"
	copyRebuilding = "rebuilding"
)

// serverRecord is what redundancy.db keeps of a server not up.
type serverRecord struct {
	// State is "down" or "rebuilding" (pb.ServerState names, lower case).
	State string `json:"state"`
	// Since is when it entered State, unix nanoseconds.
	Since int64 `json:"since"`
	// Reason is the error that made famd declare it down.
	Reason string `json:"reason,omitempty"`
}

// copyRecord is what redundancy.db keeps of a copy that is not current.
type copyRecord struct {
	State string `json:"state"` // copyStale or copyRebuilding
	// Watermark is how many bytes of the copy the rebuild has made
	// current, in the rebuild's own order; Total is how many it will.
	Watermark uint64 `json:"watermark"`
	Total     uint64 `json:"total"`
	// Incarnation names the server incarnation the watermark is about
	// (a hash of the secret it joined with): a server that restarted since
	// lost what was rebuilt, so its rebuild starts again from 0.
	Incarnation string `json:"incarnation,omitempty"`
	Since       int64  `json:"since"`
}

// copyKey names one copy: a region's segment(s) on one memory server.
type copyKey struct {
	Region, Server uint64
}

func (k copyKey) bytes() []byte {
	b := make([]byte, 16)
	binary.BigEndian.PutUint64(b, k.Region)
	binary.BigEndian.PutUint64(b[8:], k.Server)
	return b
}

// redundancyStore is redundancy.db. Its methods are called with the
// health monitor's lock held, which orders the writes as the transitions.
type redundancyStore struct {
	db *bolt.DB
}

// openRedundancyStore opens (creating) dir/redundancy.db and returns it
// with what it holds.
func openRedundancyStore(dir string) (*redundancyStore, map[uint64]serverRecord, map[copyKey]copyRecord, error) {
	path := filepath.Join(dir, "redundancy.db")
	// famd's data directory lock already keeps a second famd out; the
	// timeout only bounds a wait that cannot normally happen.
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %v", path, err)
	}
	servers := map[uint64]serverRecord{}
	copies := map[copyKey]copyRecord{}
	err = db.Update(func(tx *bolt.Tx) error {
		bs, err := tx.CreateBucketIfNotExists(bucketServers)
		if err != nil {
			return err
		}
		bc, err := tx.CreateBucketIfNotExists(bucketCopies)
		if err != nil {
			return err
		}
		if err := bs.ForEach(func(k, v []byte) error {
			if len(k) != 8 {
				return fmt.Errorf("server record with a key of %d bytes", len(k))
			}
			var r serverRecord
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("server %d: %v", binary.BigEndian.Uint64(k), err)
			}
			servers[binary.BigEndian.Uint64(k)] = r
			return nil
		}); err != nil {
			return err
		}
		return bc.ForEach(func(k, v []byte) error {
			if len(k) != 16 {
				return fmt.Errorf("copy record with a key of %d bytes", len(k))
			}
			key := copyKey{binary.BigEndian.Uint64(k), binary.BigEndian.Uint64(k[8:])}
			var r copyRecord
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("region %d on server %d: %v", key.Region, key.Server, err)
			}
			if r.State != copyStale && r.State != copyRebuilding {
				return fmt.Errorf("region %d on server %d: unknown copy state %q", key.Region, key.Server, r.State)
			}
			copies[key] = r
			return nil
		})
	})
	if err != nil {
		db.Close()
		// A record famd cannot read must not be taken for "current": that
		// would serve a stale copy. famd refuses to start instead.
		return nil, nil, nil, fmt.Errorf("%s: %v (move it aside only if every memory server's copies are known to be current)", path, err)
	}
	return &redundancyStore{db: db}, servers, copies, nil
}

// putServer records id's state; nil deletes the record (the server is up).
func (s *redundancyStore) putServer(id uint64, r *serverRecord) error {
	k := copyKey{Region: id}.bytes()[:8]
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketServers)
		if r == nil {
			return b.Delete(k)
		}
		v, err := json.Marshal(r)
		if err != nil {
			return err
		}
		return b.Put(k, v)
	})
}

// putCopies records copies in one transaction; a nil record deletes its
// copy's (the copy is current).
func (s *redundancyStore) putCopies(recs map[copyKey]*copyRecord) error {
	if len(recs) == 0 {
		return nil
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketCopies)
		for k, r := range recs {
			if r == nil {
				if err := b.Delete(k.bytes()); err != nil {
					return err
				}
				continue
			}
			v, err := json.Marshal(r)
			if err != nil {
				return err
			}
			if err := b.Put(k.bytes(), v); err != nil {
				return err
			}
		}
		return nil
	})
}

func (s *redundancyStore) close() error {
	if s == nil {
		return nil
	}
	return s.db.Close()
}

// errNoRebuilder says why a rebuild cannot start: famd was built without
// the memory servers' rebuild call wired in (see Rebuilder).
var errNoRebuilder = errors.New("this famd has no rebuild implementation (Cluster.SetRebuilder was not called)")
