// Package suggest measures how far a misspelt word is from the one meant,
// for the "did you mean" of config errors and the CLI. It keeps no state.
package suggest
