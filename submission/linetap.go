package submission

import (
	"bufio"
	"io"
	"reflect"
	"sync"
	"unsafe"

	"github.com/emersion/go-smtp"
)

// lineTap reaches the connection underneath go-smtp's line-length limiter,
// so that dotBody can read a DATA body from the connection in 32 KiB reads
// instead of through go-smtp's 4 KiB buffer and its byte-at-a-time
// line-length loop (together 5 read(2) calls and ~4% of the CPU per 20 KiB
// message), and then give back what it read beyond the body.
//
// go-smtp (v0.26.0) reads a session as bufio.Reader -> lineLimitReader{R:
// the connection} (conn.go, init). Below that buffer nothing but the
// limiter has state: its count of the current line. So a reader of R must
// (1) check line lengths itself, exactly as the limiter would (dotBody's
// lineLimit: a line longer than LineLimit bytes with its CRLF), and (2)
// afterwards put back whatever it read past the body's last byte: the end
// marker "." CRLF and any commands the client pipelined behind it. It puts
// them back in front of R (handBack), with the limiter's count at zero, so
// go-smtp reads on exactly where it would have. After a too-long line it
// sets the count over the limit instead, so go-smtp's next read fails as it
// would have (ErrTooLongLine: go-smtp answers 500 and hangs up).
//
// Like takeOver, the shapes are checked field by field (smtp.Conn has a
// *lineLimitReader with R io.Reader, LineLimit int and curLineLength int,
// and the session's bufio.Reader reads from it through nothing but the
// io.ReadWriteCloser struct go-smtp wraps it in: not with go-smtp's Debug
// tee in between); TestDataTakenOver fails if an upgrade
// changes them, and until then dotBody reads through go-smtp's buffer.
type lineTap struct {
	llr unsafe.Pointer // go-smtp's *lineLimitReader
	sh  *tapShape
}

// tapShape is where the limiter and the buffer keep what lineTap uses.
type tapShape struct {
	ok       bool
	field    uintptr // smtp.Conn.lineLimitReader
	r, limit uintptr // lineLimitReader.R, .LineLimit
	count    uintptr // lineLimitReader.curLineLength
	rd       uintptr // bufio.Reader.rd
}

var tapShapeOnce = sync.OnceValue(inspectTap)

func inspectTap() *tapShape {
	no := &tapShape{}
	f, ok := reflect.TypeFor[smtp.Conn]().FieldByName("lineLimitReader")
	if !ok || f.Type.Kind() != reflect.Pointer {
		return no
	}
	l := f.Type.Elem()
	if l.Kind() != reflect.Struct || l.Name() != "lineLimitReader" || l.PkgPath() != "github.com/emersion/go-smtp" {
		return no
	}
	r, ok1 := l.FieldByName("R")
	lim, ok2 := l.FieldByName("LineLimit")
	cnt, ok3 := l.FieldByName("curLineLength")
	rd, ok4 := reflect.TypeFor[bufio.Reader]().FieldByName("rd")
	intT, readerT := reflect.TypeFor[int](), reflect.TypeFor[io.Reader]()
	if !ok1 || !ok2 || !ok3 || !ok4 || r.Type != readerT || lim.Type != intT || cnt.Type != intT || rd.Type != readerT {
		return no
	}
	return &tapShape{ok: true, field: f.Offset, r: r.Offset, limit: lim.Offset, count: cnt.Offset, rd: rd.Offset}
}

// tap returns the line tap of c, whose session reader is br, or ok false
// when the shapes are not the expected ones or br does not read straight
// from the limiter.
func tap(c *smtp.Conn, br *bufio.Reader) (lineTap, bool) {
	sh := tapShapeOnce()
	if c == nil || br == nil || !sh.ok {
		return lineTap{}, false
	}
	llr := *(*unsafe.Pointer)(unsafe.Add(unsafe.Pointer(c), sh.field))
	if llr == nil {
		return lineTap{}, false
	}
	if !readsFrom(*(*io.Reader)(unsafe.Add(unsafe.Pointer(br), sh.rd)), llr) {
		return lineTap{}, false
	}
	return lineTap{llr: llr, sh: sh}, true
}

// readsFrom reports whether rd, what the session's bufio.Reader reads, is
// go-smtp's struct{io.Reader; io.Writer; io.Closer} (textproto.NewConn's
// argument, conn.go init) whose Reader is the limiter at llr itself (and
// not io.TeeReader, as with Server.Debug).
func readsFrom(rd io.Reader, llr unsafe.Pointer) bool {
	v := reflect.ValueOf(rd)
	if v.Kind() != reflect.Struct || v.NumField() != 3 || !v.Type().Field(0).Anonymous || v.Type().Field(0).Type != reflect.TypeFor[io.Reader]() {
		return false
	}
	r := v.Field(0).Elem()
	return r.Kind() == reflect.Pointer && r.UnsafePointer() == llr
}

func (t lineTap) slot() *io.Reader { return (*io.Reader)(unsafe.Add(t.llr, t.sh.r)) }
func (t lineTap) count() *int      { return (*int)(unsafe.Add(t.llr, t.sh.count)) }

// src is what the limiter reads from: the connection, or a handBack still
// holding bytes of an earlier body's read.
func (t lineTap) src() io.Reader { return *t.slot() }

// limit is go-smtp's line-length limit (0: none).
func (t lineTap) limit() int { return *(*int)(unsafe.Add(t.llr, t.sh.limit)) }

// giveBack puts rest (copied) in front of what the limiter reads next.
func (t lineTap) giveBack(rest []byte) {
	*t.count() = 0
	if len(rest) == 0 {
		return
	}
	slot := t.slot()
	*slot = &handBack{rest: append([]byte(nil), rest...), next: *slot, slot: slot}
}

// stick makes the limiter's next read fail with ErrTooLongLine.
func (t lineTap) stick() {
	if l := t.limit(); l > 0 {
		*t.count() = l + 1
	}
}

// handBack yields bytes read ahead of go-smtp, then puts the reader it
// stands in front of back into the limiter and reads from that.
type handBack struct {
	rest []byte
	next io.Reader
	slot *io.Reader
}

func (h *handBack) Read(p []byte) (int, error) {
	if len(h.rest) == 0 {
		if *h.slot == io.Reader(h) {
			*h.slot = h.next
		}
		return h.next.Read(p)
	}
	n := copy(p, h.rest)
	h.rest = h.rest[n:]
	if len(h.rest) == 0 && *h.slot == io.Reader(h) {
		*h.slot = h.next
	}
	return n, nil
}
