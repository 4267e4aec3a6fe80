package features

import (
	"errors"
	"os"
	"strconv"

	"github.com/cucumber/godog"
)

// ---- identities (Go backend only) -----------------------------------------------------

func (w *world) actAs(uid, group string) error {
	gb, ok := w.b.(*goBackend)
	if !ok {
		return errors.New("acting as another user needs the Go backend (tag the scenario @go-only)")
	}
	u, err := strconv.ParseUint(uid, 10, 32)
	if err != nil {
		return err
	}
	g := uint32(os.Getgid())
	if group == "another" {
		g++
	}
	gb.actAs(&[2]uint32{uint32(u), g})
	return nil
}

func (w *world) actAsMyself() error {
	gb, ok := w.b.(*goBackend)
	if !ok {
		return errors.New("acting as another user needs the Go backend (tag the scenario @go-only)")
	}
	gb.actAs(nil)
	return nil
}

// registerActAs registers the steps that switch the Go backend's identity (@go-only).
func (w *world) registerActAs(sc *godog.ScenarioContext) {
	sc.Step(`^I act as user `+num+` of (my|another) group$`, w.actAs)
	sc.Step(`^I act as myself again$`, w.actAsMyself)
}
