package main

import (
	"os"

	"github.com/gofam/openfam/core"
)

// clientPersist describes the persistence policy a program started from
// famctl's environment gets ($OPENFAM_PERSIST, $OPENFAM_PERSIST_INTERVAL;
// issue 20), or why it would not start.
func clientPersist() string {
	p, err := core.ParsePersistPolicy(os.Getenv("OPENFAM_PERSIST"))
	if err != nil {
		return "invalid: " + err.Error()
	}
	if p != core.PersistLazy {
		return p.String()
	}
	iv := core.DefaultPersistInterval.String()
	if v := os.Getenv("OPENFAM_PERSIST_INTERVAL"); v != "" {
		iv = v
	}
	return p.String() + " " + iv
}
