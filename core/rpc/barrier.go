package rpc

import (
	"context"
	"sync"

	"google.golang.org/grpc/status"

	"github.com/gofam/openfam/core"
)

const barrierOp = "fam_barrier_all"

// barrier is one generation of one job's barrier. When the last PE
// arrives the generation is released and removed, so the job's next
// barrier starts a fresh one.
type barrier struct {
	size  uint32
	ranks map[uint32]struct{}
	done  chan struct{}
}

// barriers holds the open generation of every job.
type barriers struct {
	mu      sync.Mutex
	jobs    map[string]*barrier
	stopped chan struct{} // closed by drain: famd is stopping
	once    sync.Once
}

func newBarriers() *barriers {
	return &barriers{jobs: map[string]*barrier{}, stopped: make(chan struct{})}
}

// wait blocks until size PEs of job (ranks 0..size-1, each once) are in
// the current generation. Domain errors are *core.Error; a caller whose
// ctx ends leaves the generation and gets ctx's gRPC status.
func (b *barriers) wait(ctx context.Context, job string, size, rank uint32) error {
	switch {
	case job == "":
		return core.Errorf(core.CodeInvalid, barrierOp, "no job id: start the PEs with famrun (FAMRUN_JOB) or under SLURM")
	case size == 0:
		return core.Errorf(core.CodeInvalid, barrierOp, "job %q: barrier size is 0", job)
	case rank >= size:
		return core.Errorf(core.CodeInvalid, barrierOp, "job %q: rank %d is not below the job size %d", job, rank, size)
	}
	b.mu.Lock()
	select {
	case <-b.stopped:
		b.mu.Unlock()
		return core.Errorf(core.CodeRPC, barrierOp, "famd is shutting down")
	default:
	}
	br := b.jobs[job]
	if br == nil {
		br = &barrier{size: size, ranks: map[uint32]struct{}{}, done: make(chan struct{})}
		b.jobs[job] = br
	}
	if br.size != size {
		b.mu.Unlock()
		return core.Errorf(core.CodeInvalid, barrierOp, "job %q: this PE expects %d PEs but a barrier of %d is in progress", job, size, br.size)
	}
	if _, dup := br.ranks[rank]; dup {
		b.mu.Unlock()
		return core.Errorf(core.CodeInvalid, barrierOp, "job %q: rank %d is already waiting at this barrier", job, rank)
	}
	br.ranks[rank] = struct{}{}
	if uint32(len(br.ranks)) == size {
		delete(b.jobs, job)
		close(br.done)
		b.mu.Unlock()
		return nil
	}
	b.mu.Unlock()
	select {
	case <-br.done:
		return nil
	case <-b.stopped:
		return core.Errorf(core.CodeRPC, barrierOp, "famd is shutting down")
	case <-ctx.Done():
		b.mu.Lock()
		defer b.mu.Unlock()
		select {
		case <-br.done:
			// Released while we were giving up: the others counted us.
			return nil
		default:
		}
		delete(br.ranks, rank)
		if len(br.ranks) == 0 && b.jobs[job] == br {
			delete(b.jobs, job)
		}
		return status.FromContextError(ctx.Err()).Err()
	}
}

// drain releases every waiter with an error and refuses later calls.
func (b *barriers) drain() {
	b.once.Do(func() { close(b.stopped) })
}
