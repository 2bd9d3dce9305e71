// Package suggest measures how far a misspelt word is from the one meant,
// for the "did you mean" of config errors, the CLI and the HTTP APIs'
// query parameters. It keeps no state.
package suggest
