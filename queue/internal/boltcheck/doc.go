// Package boltcheck reads a bbolt file's pages with plain reads, never
// mapping it: the meta pages, the freelist and every page of every tree.
// A damaged file makes bbolt fault or panic where no recover reaches, so
// the queue checks a file here before bbolt opens it (Structure), and the
// salvage walks what is still readable here (Salvage). Guarded runs what
// bbolt does afterwards with faults turned into errors.
//
// It knows bbolt's format version 2 and nothing of the queue's buckets or
// records: their content is the queue's checksums' business.
//
// Invariants:
//   - No input file, however damaged, makes a function here fault, panic
//     or loop: every page number is checked against the high-water mark
//     and the pages already seen before it is read.
//   - Structure holds a shared lock on the file while it reads, as a
//     read-only bbolt does, so a running relay's half-done writes are
//     reported as ErrLocked, never as damage.
package boltcheck
