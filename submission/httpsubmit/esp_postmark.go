package httpsubmit

import (
	"errors"
	"net/http"
	"strings"

	"github.com/relayq/relayq/internal/esp"
	"github.com/relayq/relayq/internal/esp/postmark"
	smtp "github.com/relayq/relayq/internal/gosmtp"
)

// Postmark's sending paths.
const (
	PostmarkPath      = "/email"
	PostmarkBatchPath = "/email/batch"
)

// Postmark's template paths: mounted so that a template send gets
// Postmark's error naming what relayq lacks, not a bare 404.
var postmarkTemplatePaths = []string{"/email/withTemplate", "/email/batchWithTemplates"}

// postmarkAPI is Postmark's email API: the server token is a relayq API
// key, MessageStream the stream, Tag and Metadata kept with the message.
type postmarkAPI struct{}

func (postmarkAPI) name() string { return "postmark" }

func (postmarkAPI) credential(r *http.Request) string {
	return strings.TrimSpace(r.Header.Get("X-Postmark-Server-Token"))
}

func (postmarkAPI) batch(path string) bool { return path == PostmarkBatchPath }

func (postmarkAPI) parse(path string, data []byte) ([]esp.Message, []error, error) {
	switch path {
	case postmarkTemplatePaths[0], postmarkTemplatePaths[1]:
		return nil, nil, esp.Refused("TemplateId", "relayq keeps no templates; send the rendered HtmlBody and TextBody to /email")
	case PostmarkBatchPath:
		return postmark.ParseBatch(data)
	}
	m, err := postmark.ParseEmail(data)
	return []esp.Message{m}, nil, err
}

func (postmarkAPI) fail(w http.ResponseWriter, status int, e apiError, cause error) {
	var r postmark.Result
	if cause != nil {
		status, r = postmark.Failure(cause)
	} else {
		r = postmark.Result{ErrorCode: postmarkCode(status, e.Code), Message: e.Error}
	}
	writeJSON(w, status, r)
}

// postmarkCode is Postmark's ErrorCode for a refusal relayq made as SMTP
// would (status from statusFor, enhanced code).
func postmarkCode(status int, enh string) int {
	switch {
	case status == http.StatusUnauthorized:
		return postmark.CodeBadToken
	case status == http.StatusUnsupportedMediaType:
		return postmark.CodeJSONRequired
	case enh == "5.1.1": // a suppressed (or refused) recipient
		return postmark.CodeInactive
	case status == http.StatusForbidden:
		return postmark.CodeNotAllowed
	case status >= 500 || status == http.StatusTooManyRequests:
		return postmark.CodeServerError
	}
	return postmark.CodeInvalidRequest
}

func (postmarkAPI) answer(_ http.Header, path string, out []outcome) (int, []byte) {
	results := make([]postmark.Result, len(out))
	status := http.StatusOK
	for i, o := range out {
		if o.err == nil {
			results[i] = postmark.Sent(*o.msg, o.id, o.at)
			continue
		}
		status, results[i] = postmarkFailure(o.err)
	}
	if path == PostmarkBatchPath {
		return http.StatusOK, encodeJSON(results) // each item carries its own ErrorCode
	}
	return status, encodeJSON(results[0])
}

func postmarkFailure(err error) (int, postmark.Result) {
	var se *smtp.SMTPError
	if errors.As(err, &se) {
		status := statusFor(se)
		return status, postmark.Result{ErrorCode: postmarkCode(status, enhanced(se)), Message: se.Message}
	}
	return postmark.Failure(err)
}
