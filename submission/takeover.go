package submission

import (
	"bufio"
	"io"
	"reflect"
	"sync/atomic"
	"unsafe"
)

// takeOver returns the buffered reader underneath go-smtp's DATA reader r,
// so that dotBody can read the body in bulk from the very bytes go-smtp
// would have read, or nil when r is anything else (BDAT's pipe, or a go-smtp
// whose reader no longer has the shape checked here).
//
// Why: go-smtp v0.26.0's DATA reader takes the body one byte at a time
// (emersion/go-smtp#312), which was the largest CPU cost per message, and it
// drops the "." and the CR of a line starting ".\r" before relayq can see the
// bare CR. Reading the connection go-smtp hands over (Conn.Conn) is not an
// option: go-smtp's buffer may already hold body bytes a client pipelined
// after DATA, and after STARTTLS there is no other place to stand between
// TLS and that buffer. Carrying a patched copy of go-smtp would mean copying
// its code. docs/design.md ("Reading DATA") has the measurements.
//
// The reader's buffer is the session's one bufio.Reader over the connection
// (with go-smtp's line-length limit below it), and at the moment go-smtp
// calls Session.Data its DATA reader has read nothing yet (state zero: at a
// line start). dotBody leaves the final "." CRLF in that buffer, so
// go-smtp's reader, which drains what is left after Data returns, reads the
// end marker at once and carries on with the next command exactly where a
// byte-by-byte read would have. The shape of go-smtp's reader is checked
// field by field before it is touched; TestDataTakenOver fails if an
// upgrade changes it, and until then relayq falls back to go-smtp's reader.
func takeOver(r io.Reader) *bufio.Reader {
	t := reflect.TypeOf(r)
	l := knownShape.Load()
	if l == nil || l.typ != t {
		l = inspect(t)
		knownShape.Store(l)
	}
	if !l.ok {
		return nil
	}
	p := reflect.ValueOf(r).UnsafePointer()
	if *(*int)(unsafe.Add(p, l.state)) != 0 {
		return nil // already read from: not at the start of the body
	}
	return *(**bufio.Reader)(unsafe.Add(p, l.buf))
}

// readerShape is where go-smtp's DATA reader keeps its buffer and state.
type readerShape struct {
	typ        reflect.Type // the type inspected
	ok         bool         // it is go-smtp's DATA reader, as expected
	buf, state uintptr      // field offsets
}

// knownShape caches the last type inspected: Data sees go-smtp's DATA
// reader for every DATA and BDAT's pipe reader for every BDAT.
var knownShape atomic.Pointer[readerShape]

// inspect checks that t is *dataReader from go-smtp with a *bufio.Reader
// field r and an int field state, and returns their offsets.
func inspect(t reflect.Type) *readerShape {
	no := &readerShape{typ: t}
	if t == nil || t.Kind() != reflect.Pointer {
		return no
	}
	e := t.Elem()
	if e.Kind() != reflect.Struct || e.Name() != "dataReader" || e.PkgPath() != "github.com/emersion/go-smtp" {
		return no
	}
	b, ok1 := e.FieldByName("r")
	s, ok2 := e.FieldByName("state")
	if !ok1 || !ok2 || b.Type != reflect.TypeFor[*bufio.Reader]() || s.Type != reflect.TypeFor[int]() {
		return no
	}
	return &readerShape{typ: t, ok: true, buf: b.Offset, state: s.Offset}
}
