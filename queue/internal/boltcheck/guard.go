package boltcheck

import (
	"fmt"
	"runtime/debug"
)

// Guarded runs fn with faults in mapped memory turned into panics, and
// panics into an error.
func Guarded(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			err = &PanicError{p}
		}
	}()
	return fn()
}

// PanicError is a panic or memory fault caught by guarded.
type PanicError struct{ v any }

func (e *PanicError) Error() string { return fmt.Sprintf("bbolt failed reading the file: %v", e.v) }
