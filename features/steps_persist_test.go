package features

import (
	"fmt"
	"os"

	"github.com/cucumber/godog"

	"github.com/gofam/openfam/capi/cabi"
	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/internal/smaps"
)

// Persistence steps (issue 20). Whether bytes are on stable storage is
// read from the page state: a page of a persistent region's file that is
// dirty in any mapping of this process (the scenario's instance, its
// in-process famd and memory servers) is not on disk yet. Reading the
// file could not tell (see core/persist_test.go).

// persister is the backends' fam_persist / fam_ctx_persist.
type persister interface {
	Persist(c Ctx, d Handle, off, n uint64) int
}

func (b *goBackend) Persist(c Ctx, d Handle, off, n uint64) int {
	if c.On {
		if _, err := b.ctxOK(c, "fam_ctx_persist"); err != nil {
			return b.code(err)
		}
	}
	return b.code(item(d).Persist(off, n))
}

func (b *cBackend) Persist(c Ctx, d Handle, off, n uint64) int {
	return b.call("fam_persist", func() int { return cabi.Persist(h(c.H), c.On, h(d), off, n) })
}

// dirtyKB is the dirty kB of the persistent regions' files in this
// process's mappings.
func (w *world) dirtyKB() (int, error) {
	return smaps.DirtyKBMatch(0, smaps.PersistentFile)
}

func (w *world) nothingDirty() error {
	n, err := w.dirtyKB()
	if err != nil {
		return err
	}
	if n != 0 {
		return fmt.Errorf("%d kB of the persistent regions' files are dirty (not on stable storage)", n)
	}
	return nil
}

func (w *world) somethingDirty() error {
	n, err := w.dirtyKB()
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("no page of the persistent regions' files is dirty")
	}
	return nil
}

func (w *world) persistPolicy(p, interval string) error {
	os.Setenv("OPENFAM_PERSIST", p)
	if interval != "" {
		os.Setenv("OPENFAM_PERSIST_INTERVAL", interval)
	}
	return nil
}

func (w *world) persist(try, n, off, name, ctx string) error {
	d, err := w.item(name)
	if err != nil {
		return err
	}
	c, err := w.ctx(ctx)
	if err != nil {
		return err
	}
	nb, err := parseU64(n)
	if err != nil {
		return err
	}
	o, err := parseU64(off)
	if err != nil {
		return err
	}
	p, ok := w.b.(persister)
	if !ok {
		return fmt.Errorf("backend %s has no fam_persist", w.b.Name())
	}
	return w.outcome(try, "fam_persist", p.Persist(c, d, o, nb))
}

func (w *world) policyIs(want string) error {
	p, err := core.ParsePersistPolicy(os.Getenv("OPENFAM_PERSIST"))
	if err != nil {
		return err
	}
	if p.String() != want {
		return fmt.Errorf("policy %s, want %s", p, want)
	}
	return nil
}

// registerPersist registers the persistence steps.
func (w *world) registerPersist(sc *godog.ScenarioContext) {
	sc.Step(`^OPENFAM_PERSIST is "(quiet|each|lazy|[a-z]*)"(?: with an interval of (\S+))?$`, w.persistPolicy)
	sc.Step(`^no page of the persistent regions' files is dirty$`, w.nothingDirty)
	sc.Step(`^pages of the persistent regions' files are dirty$`, w.somethingDirty)
	sc.Step(`^`+try+`persist `+num+` bytes at offset `+num+` of item `+q+onCtx+`$`, w.persist)
	sc.Step(`^the persistence policy is (quiet|each|lazy)$`, w.policyIs)
}
