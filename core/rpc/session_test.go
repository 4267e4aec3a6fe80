package rpc_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/embed"
	"github.com/gofam/openfam/core/rpc"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// eventually polls cond for up to 60 s (a deadline for a loaded machine).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("%s: not within 60s", what)
}

// openSession opens a session stream on c (ended with the test, and after
// 60 s at the latest), reads its first event, and returns the stream with
// a context whose calls are made in that session, and the function that
// ends the session (the client going away).
func openSession(t *testing.T, c pb.FamClient) (pb.Fam_SessionClient, context.Context, func()) {
	t.Helper()
	sctx, endSession := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(endSession)
	stream, err := c.Session(sctx, &pb.SessionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := stream.Recv()
	if err != nil || ev.GetSession() == 0 {
		t.Fatalf("first session event: %v %v", ev, err)
	}
	return stream, metadata.AppendToOutgoingContext(ctx(t), rpc.MDSession, strconv.FormatUint(ev.GetSession(), 10)), endSession
}

// itemKey is the key of the item a successful call (res) returned.
func itemKey(t *testing.T, what string, res result[*pb.ItemReply]) string {
	t.Helper()
	return string(res.ok(t, what).GetItem().GetKey())
}

func TestSessionEndRevokesItsKeysOnly(t *testing.T) {
	d, c := start(t, embed.Options{})
	r := createRegion(t, c, "sess", 1<<20, 0o600)
	_, inSession, endSession := openSession(t, c)
	if d.Server().Sessions() != 1 {
		t.Fatalf("%d sessions open, want 1", d.Server().Sessions())
	}
	for _, name := range []string{"a", "b"} {
		check(c.Allocate(inSession, &pb.AllocateRequest{RegionId: r.GetId(), Name: name, Size: 4096, Mode: 0o600})).ok(t, "Allocate "+name)
	}
	// A key issued outside any session, and one naming an unknown session,
	// are not the session's.
	check(c.Lookup(ctx(t), &pb.LookupRequest{Item: "a", Region: "sess"})).ok(t, "Lookup without a session")
	bogus := metadata.AppendToOutgoingContext(ctx(t), rpc.MDSession, "987654321")
	check(c.Lookup(bogus, &pb.LookupRequest{Item: "b", Region: "sess"})).ok(t, "Lookup naming an unknown session")
	if d.Server().Keys() != 4 {
		t.Fatalf("%d keys, want 4", d.Server().Keys())
	}
	// The client goes away: its session's two keys are revoked, the others
	// stay.
	endSession()
	eventually(t, "session keys revoked", func() bool { return d.Server().Keys() == 2 && d.Server().Sessions() == 0 })
}

// TestSessionNotToldOfItsOwnClose: a key its session closes (fam_close)
// brings that session no revocation event, which would cost both sides a
// stream write and read per close; a key of the session closed by a
// caller outside it, and keys famd revokes (a permission change), are
// still reported, in order.
func TestSessionNotToldOfItsOwnClose(t *testing.T) {
	_, c := start(t, embed.Options{})
	r := createRegion(t, c, "own", 1<<20, 0o600)
	stream, inSession, _ := openSession(t, c)
	closed := itemKey(t, "Allocate", check(c.Allocate(inSession, &pb.AllocateRequest{RegionId: r.GetId(), Name: "a", Size: 4096, Mode: 0o600})))
	kept := itemKey(t, "Lookup", check(c.Lookup(inSession, &pb.LookupRequest{Item: "a", Region: "own"})))
	other := itemKey(t, "Lookup", check(c.Lookup(inSession, &pb.LookupRequest{Item: "a", Region: "own"})))
	check(c.CloseItem(inSession, &pb.KeyRequest{Key: []byte(closed)})).ok(t, "CloseItem in its session")
	check(c.CloseItem(ctx(t), &pb.KeyRequest{Key: []byte(other)})).ok(t, "CloseItem outside its session")
	check(c.ChangeItemPermissions(inSession, &pb.ChangeItemPermissionsRequest{Key: []byte(kept), Mode: 0o640})).ok(t, "ChangeItemPermissions")
	// Events of one session go out in the order famd revoked the keys: an
	// event for the closed key would come first.
	for _, want := range []string{other, kept} {
		ev, err := stream.Recv()
		if err != nil {
			t.Fatalf("session event: %v", err)
		}
		for ev.GetServerId() != 0 && len(ev.GetRevoked()) == 0 {
			if ev, err = stream.Recv(); err != nil {
				t.Fatalf("session event: %v", err)
			}
		}
		switch got := string(ev.GetRevoked()); got {
		case want:
		case closed:
			t.Fatalf("the session was told of the key it closed itself")
		default:
			t.Fatalf("revoked key %x, want %x", got, want)
		}
	}
}

// TestSessionNotToldOfItsOwnDeallocate: the key a session deallocates an
// item through brings that session no revocation event (the client
// releases its handles of the item itself; the event cost both sides a
// stream write and read and an HTTP/2 ping per fam_deallocate, issue 19),
// while the session's other keys of the item, and a key of the session
// deallocated by a caller outside it, are still reported, in order.
func TestSessionNotToldOfItsOwnDeallocate(t *testing.T) {
	_, c := start(t, embed.Options{})
	r := createRegion(t, c, "ownfree", 1<<20, 0o600)
	stream, inSession, _ := openSession(t, c)
	freed := itemKey(t, "Allocate a", check(c.Allocate(inSession, &pb.AllocateRequest{RegionId: r.GetId(), Name: "a", Size: 4096, Mode: 0o600})))
	sibling := itemKey(t, "Lookup a", check(c.Lookup(inSession, &pb.LookupRequest{Item: "a", Region: "ownfree"})))
	outside := itemKey(t, "Allocate b", check(c.Allocate(inSession, &pb.AllocateRequest{RegionId: r.GetId(), Name: "b", Size: 4096, Mode: 0o600})))
	check(c.Deallocate(inSession, &pb.KeyRequest{Key: []byte(freed)})).ok(t, "Deallocate a in its session")
	check(c.Deallocate(ctx(t), &pb.KeyRequest{Key: []byte(outside)})).ok(t, "Deallocate b outside its session")
	var got []string
	for len(got) == 0 || got[len(got)-1] != outside {
		ev, err := stream.Recv()
		if err != nil {
			t.Fatalf("session event: %v", err)
		}
		if k := string(ev.GetRevoked()); k != "" {
			if k == freed {
				t.Fatalf("the session was told of the key it deallocated the item through")
			}
			got = append(got, k)
		}
	}
	if len(got) != 2 || got[0] != sibling {
		t.Fatalf("revocations told %x, want the sibling key %x then %x", got, sibling, outside)
	}
}

// TestSessionToldAfterFailedOwnDeallocate: a deallocation through a key of
// the caller's own session that fails (here: a group member, which may
// read the item but not write its region) leaves the key's revocations
// reported as before: the owner's later permission change reaches the
// member's session.
func TestSessionToldAfterFailedOwnDeallocate(t *testing.T) {
	_, owner, member := groupPeer(t, "failed-dealloc-token")
	r := createRegion(t, owner, "nofree", 1<<20, 0o640)
	check(owner.Allocate(ctx(t), &pb.AllocateRequest{RegionId: r.GetId(), Name: "a", Size: 4096, Mode: 0o640})).ok(t, "Allocate")
	stream, inSession, _ := openSession(t, member)
	mk := check(member.Lookup(inSession, &pb.LookupRequest{Item: "a", Region: "nofree"})).ok(t, "member's Lookup").GetItem().GetKey()
	check(member.Deallocate(inSession, &pb.KeyRequest{Key: mk})).code(t, "member's Deallocate", core.CodeNoPerm)
	ok := check(owner.Lookup(ctx(t), &pb.LookupRequest{Item: "a", Region: "nofree"})).ok(t, "owner's Lookup").GetItem().GetKey()
	check(owner.ChangeItemPermissions(ctx(t), &pb.ChangeItemPermissionsRequest{Key: ok, Mode: 0o600})).ok(t, "ChangeItemPermissions")
	for {
		ev, err := stream.Recv()
		if err != nil {
			t.Fatalf("waiting for the revocation of the member's key: %v", err)
		}
		if string(ev.GetRevoked()) == string(mk) {
			return
		}
	}
}
