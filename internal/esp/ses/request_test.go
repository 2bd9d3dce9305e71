package ses

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/relayq/relayq/internal/esp"
)

func TestParseRefuses(t *testing.T) {
	const base = `"FromEmailAddress":"app@example.org","Destination":{"ToAddresses":["a@example.net"]}`
	const body = `"Simple":{"Subject":{"Data":"s"},"Body":{"Text":{"Data":"x"}}}`
	for _, c := range []struct{ in, field string }{
		{`{` + base + `,"Content":{"Template":{"TemplateName":"t"}}}`, "Content.Template"},
		{`{` + base + `,"Content":{` + body + `},"ListManagementOptions":{"ContactListName":"l"}}`, "ListManagementOptions"},
		{`{` + base + `,"Content":{"Simple":{"Body":{"Text":{"Data":"x","Charset":"ISO-8859-1"}}}}}`, "Content.Simple.Body.Text.Charset"},
		{`{` + base + `,"Content":{}}`, "Content"},
		{`{` + base + `,"Content":{` + body + `},"Unknown":1}`, "Unknown"},
		{`{"FromEmailAddress":"nope","Destination":{"ToAddresses":["a@example.net"]},"Content":{` + body + `}}`, "FromEmailAddress"},
		{`{` + base + `,"Content":{"Raw":{"Data":"!!"}}}`, "Content.Raw.Data"},
	} {
		_, err := Parse([]byte(c.in))
		var e *esp.Error
		if !errors.As(err, &e) || e.Field != c.field {
			t.Errorf("%s: %v, want an error naming %s", c.in, err, c.field)
		}
		if f := Failure(err); f.Status != http.StatusBadRequest || f.Type != TypeBadRequest {
			t.Errorf("%s: %+v", c.in, f)
		}
	}
	m, err := Parse([]byte(`{` + base + `,"Content":{` + body + `},"EmailTags":[{"Name":"k","Value":"v"}],"ConfigurationSetName":"cs"}`))
	if err != nil || m.Metadata["k"] != "v" || m.Stream != "cs" || m.Subject != "s" {
		t.Errorf("%+v %v", m, err)
	}
}

// Verify refuses a request without a usable signature before any
// signing: each case is one way the header is wrong.
func TestVerifyRefuses(t *testing.T) {
	now := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	secret := func(id string) (string, bool) { return "s", id == "AKID" }
	for _, c := range []struct{ auth, date, want string }{
		{"", "20261206T100000Z", typeMissing},
		{"Bearer x", "20261206T100000Z", typeIncomplete},
		{"AWS4-HMAC-SHA256 Credential=OTHER/20261206/eu-west-1/ses/aws4_request, SignedHeaders=host, Signature=00", "20261206T100000Z", typeUnrecognized},
		{"AWS4-HMAC-SHA256 Credential=AKID/20261206/eu-west-1/s3/aws4_request, SignedHeaders=host, Signature=00", "20261206T100000Z", typeIncomplete},
		{"AWS4-HMAC-SHA256 Credential=AKID/20261206/eu-west-1/ses/aws4_request, SignedHeaders=host, Signature=00", "20261206T093000Z", typeInvalid},
		{"AWS4-HMAC-SHA256 Credential=AKID/20261206/eu-west-1/ses/aws4_request, SignedHeaders=host;x-amz-date, Signature=00", "20261206T100000Z", typeInvalid},
	} {
		r, _ := http.NewRequest(http.MethodPost, "http://relay.test/v2/email/outbound-emails", nil)
		r.Header.Set("Authorization", c.auth)
		r.Header.Set("X-Amz-Date", c.date)
		_, err := Verify(r, []byte("{}"), now, secret)
		var ae *AuthError
		if !errors.As(err, &ae) || ae.Type != c.want {
			t.Errorf("%q at %s: %v, want %s", c.auth, c.date, err, c.want)
		}
	}
}
