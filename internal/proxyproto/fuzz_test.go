package proxyproto

import (
	"bytes"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// byteConn is a net.Conn that reads from a fixed slice: what a trusted
// proxy's peer sent.
type byteConn struct {
	r *bytes.Reader
}

func (c byteConn) Read(p []byte) (int, error)     { return c.r.Read(p) }
func (byteConn) Write(p []byte) (int, error)      { return len(p), nil }
func (byteConn) Close() error                     { return nil }
func (byteConn) LocalAddr() net.Addr              { return &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 25} }
func (byteConn) RemoteAddr() net.Addr             { return &net.TCPAddr{IP: net.IPv4(10, 0, 0, 2), Port: 40000} }
func (byteConn) SetDeadline(time.Time) error      { return nil }
func (byteConn) SetReadDeadline(time.Time) error  { return nil }
func (byteConn) SetWriteDeadline(time.Time) error { return nil }

// Whatever a trusted proxy sends, reading its header never panics, and
// when it is believed the client is a TCP address and the connection
// yields exactly the bytes after the header.
func FuzzReadHeader(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "haproxy", "*.bin"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("PROXY UNKNOWN\r\nEHLO x\r\n"))
	f.Add([]byte("PROXY TCP6 2001:db8::1 2001:db8::2 1 25\r\n"))
	f.Add([]byte("EHLO x\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := readHeader(byteConn{bytes.NewReader(in)}, time.Second)
		if err != nil {
			return
		}
		client, ok := c.RemoteAddr().(*net.TCPAddr)
		if !ok || client.IP == nil {
			t.Fatalf("believed a header naming %#v", c.RemoteAddr())
		}
		_ = client.String()
		rest, err := io.ReadAll(c)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasSuffix(in, rest) || len(rest) == len(in) {
			t.Fatalf("after the header the connection gave %q, not a proper suffix of %q", rest, in)
		}
	})
}
