//go:build !linux

package hugeheap

// supported: transparent huge pages and their advice are Linux's.
func supported() bool { return false }

// Advise does nothing outside Linux.
func Advise() (Stats, error) { return Stats{}, nil }
