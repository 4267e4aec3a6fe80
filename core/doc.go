// Package core is the Go implementation of the OpenFAM programming model.
package core
