// Package core is the Go implementation of the OpenFAM programming model:
// regions (heaps with a memory type, interleaving and permission level),
// data items allocated in them with names and POSIX-style modes, and the
// data path over them (get/put, strided and indexed gather/scatter, copy,
// atomics, fence/quiet, contexts, backup/restore).
//
// Every binding reaches it: Go programs import it directly; C, C++, Python
// and Chapel programs go through libopenfam.so (package capi), which calls
// the same methods and reads the same memory.
//
// # Embedded service
//
// Initialize with no server configured serves everything inside the
// process. Region and item metadata live in a bbolt store with a write-ahead
// journal (package metadata) under Options.DataDir; each region's heap is a
// file, on tmpfs (Options.ShmDir) for volatile regions or under DataDir for
// persistent ones, mapped MAP_SHARED. Because the bytes live in a shared
// file mapping, a completed put survives a crash of the process that made
// it, and another process mapping the same file sees the same memory and can
// operate on it atomically (package amo uses the CPU's locked instructions,
// as the C fast path does). Space inside a heap is managed by package
// allocator and rebuilt from the metadata when a region is reopened.
//
// With Options.Server set, famd serves the same calls instead: the
// instance keeps only handles and keys, and maps items famd passes. Both
// modes implement one unexported interface (backend.go), behind which the
// public methods check arguments and keep handles once.
//
// # Handles
//
// Region and Item values are handles: several may name one region or item,
// each is released by its own Close (or Destroy, Deallocate, Finalize), and
// a released handle fails every call with CodeInvalid. Handles made from a
// GlobalDesc resolve lazily, on first use, with the permission check a
// lookup would do.
//
// A handle is bound to one incarnation of an item (metadata.Item.Gen), not
// to its offset: deallocating an item releases exactly the handles of that
// incarnation, and neither a racing deallocation nor a late revocation event
// from famd ever releases, changes or redirects a handle of a new item that
// took the same offset. A handle made from a GlobalDesc binds to the item at
// the descriptor when it is first resolved.
//
// # Errors
//
// Every failure is an *Error whose Code equals OpenFAM's Fam_Error number
// (and the C library's FAM_E* code), with the operation and a message.
//
// # Concurrency
//
// All methods are safe for concurrent use. The data path takes no locks: an
// Item holds an immutable view (mapping, size, rights) swapped atomically
// when permissions change or a resize remaps the region. Old mappings stay
// mapped until Finalize so a racing access through a stale address never
// faults.
package core
