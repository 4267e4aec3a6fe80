// Command lib is built with -buildmode=c-shared into libopenfam.so.0: the
// native C library of openfam.h. All of its code lives in package capi.
package main

import _ "github.com/gofam/openfam/capi"

// main is never run: a c-shared build needs a main package.
func main() {}
