package console

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/relayq/relayq/internal/admin"
)

// inproc is an http.RoundTripper that serves a request with the admin API
// handler in this process, so the console uses the API's own code (and its
// authorization) without a socket.
type inproc struct{ api http.Handler }

func (t inproc) RoundTrip(req *http.Request) (*http.Response, error) {
	// The API's browser rules see a request from this host, as the CLI's.
	req = req.Clone(req.Context())
	req.Host = "localhost"
	req.RemoteAddr = "127.0.0.1:0"
	req.RequestURI = req.URL.RequestURI()
	if req.Body == nil {
		req.Body = http.NoBody
	}
	w := &recorder{header: http.Header{}}
	t.api.ServeHTTP(w, req)
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return &http.Response{
		Status: fmt.Sprintf("%d %s", w.code, http.StatusText(w.code)), StatusCode: w.code,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: w.header, Body: io.NopCloser(&w.body), ContentLength: int64(w.body.Len()), Request: req,
	}, nil
}

// recorder is the ResponseWriter the API writes to.
type recorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) Write(p []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.body.Write(p)
}
func (r *recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}

// apiTimeout bounds one call; a long poll asks for less (eventWait).
const apiTimeout = 55 * time.Second

// client is an admin API client for a session's token.
func (c *Console) client(token string) *admin.Client {
	return &admin.Client{BaseURL: "http://localhost", Token: token, HTTP: &http.Client{Transport: inproc{c.api}, Timeout: apiTimeout}}
}
