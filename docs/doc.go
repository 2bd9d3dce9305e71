// Package docs holds relayq's design notes (design.md). It has no code: its
// test checks that the import rules design.md states are the ones the
// packages keep, so the document cannot drift from the tree.
package docs
