// Package allocator manages the free space of one region heap: first-fit
// allocation of 64-byte aligned blocks with reuse after free and coalescing of
// neighbouring free blocks. It keeps no state on disk: a reopened region
// rebuilds its allocator by Reserve-ing every item recorded in the metadata.
// An Allocator is not safe for concurrent use; its owner serialises calls.
package allocator
