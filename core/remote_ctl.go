package core

import (
	"context"
	"errors"
	"fmt"
	"os"

	"google.golang.org/protobuf/proto"

	"github.com/gofam/openfam/core/transport"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// Control calls over famd's data plane (transport.Controller): fam_lookup,
// fam_lookup_region, fam_allocate, fam_deallocate, fam_close and
// fam_close_region go to famd on the data-plane connection it already has
// instead of gRPC, which costs several goroutine and thread hand-overs on
// each side per call; on famd's Unix socket a looked-up or allocated
// item's descriptor comes in the same exchange, where it took an OpenFD
// round trip after the call. famd runs the same handlers either way. A
// famd that does not serve them (a memory-role famd, MUNGE on TCP, an
// older famd) answers FAM_EUNIMPL once, and the instance uses gRPC from
// then on.

// ctlFD is the descriptor a control reply brought: the item's heap file,
// the item's offset in it, its size and the rights.
type ctlFD struct {
	f         *os.File
	off, size uint64
	rights    Rights
}

// ctlCall makes control call method with request in over the data plane,
// decoding the reply into out, or, when famd does not serve it there, with
// grpcCall. retry says the call may be made again on gRPC after a failed
// data-plane attempt (it changes nothing, or nothing twice); otherwise a
// data-plane failure is the call's failure, as a gRPC one would be.
// grpcCall gets a context bounded by the instance's timeout, made only
// when gRPC is used: a context with a timeout arms a runtime timer, a few
// microseconds of every control call that the data plane, which times its
// requests itself, does not need (issue 19).
func ctlCall[Rep proto.Message](r *remote, method uint64, in proto.Message, out Rep, retry bool,
	grpcCall func(ctx context.Context) (Rep, error)) (Rep, *ctlFD, error) {
	viaGRPC := func() (Rep, error) {
		ctx, cancel := r.ctx()
		defer cancel()
		return grpcCall(ctx)
	}
	dc := ctlClient(r.data()) // fabricplane.go
	if dc == nil || r.noCtl.Load() {
		rep, err := viaGRPC()
		return rep, nil, err
	}
	req, err := proto.Marshal(in)
	if err != nil {
		rep, err := viaGRPC()
		return rep, nil, err
	}
	var sess uint64
	if r.sess != nil {
		sess = r.sess.Load()
	}
	b, f, off, size, rights, err := dc.Control(method, sess, req)
	var te *transport.Error
	switch {
	case err == nil:
		if uerr := proto.Unmarshal(b, out); uerr != nil {
			if f != nil {
				f.Close()
			}
			var zero Rep
			return zero, nil, fmt.Errorf("malformed control reply on the data plane: %v", uerr)
		}
		var fd *ctlFD
		if f != nil {
			fd = &ctlFD{f: f, off: off, size: size, rights: Rights(rights)}
		}
		return out, fd, nil
	case errors.As(err, &te) && te.Code == int32(CodeUnimplemented):
		r.noCtl.Store(true)
	case !retry:
		var zero Rep
		return zero, nil, fmt.Errorf("data plane: %v", err)
	}
	rep, err := viaGRPC()
	return rep, nil, err
}

// close releases the descriptor, if any.
func (c *ctlFD) close() {
	if c != nil {
		c.f.Close()
	}
}

// closeKeyAsync tells famd, over the data plane and without waiting for
// its answer, that key is no longer used (fam_close): the request goes out
// with the instance's next call on that connection, or soon after
// (transport.Client.ControlAsync), so a close costs no round trip. It
// reports false when famd does not serve control calls there; the caller
// then uses gRPC. famd revokes the key on its own when the session ends,
// so a close lost with its connection leaks nothing for long.
func (r *remote) closeKeyAsync(key transport.Key) bool {
	dc := ctlClient(r.data()) // fabricplane.go
	if dc == nil || r.noCtl.Load() {
		return false
	}
	req, err := proto.Marshal(&pb.KeyRequest{Key: key[:]})
	if err != nil {
		return false
	}
	var sess uint64
	if r.sess != nil {
		sess = r.sess.Load()
	}
	if _, err := dc.ControlAsync(transport.CtlCloseItem, sess, req); err != nil {
		r.noCtl.Store(true)
		return false
	}
	return true
}
