package httpsubmit

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/aws/aws-sdk-go-v2/service/sesv2/types"
	"github.com/aws/smithy-go"

	"github.com/relayq/relayq/internal/clock"
)

const (
	sesKeyID  = "AKIARELAYQTEST000001"
	sesSecret = "relayq/ses/test/secret/0123456789abcdefghij"
)

// recorder keeps the last request the SDK sent, body included, so that a
// test can send it again as an attacker would: later, or altered.
type recorder struct {
	last *http.Request
	body []byte
}

func (rec *recorder) RoundTrip(r *http.Request) (*http.Response, error) {
	b, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(b))
	rec.last, rec.body = r.Clone(context.Background()), b
	return http.DefaultTransport.RoundTrip(r)
}

func sesClient(url, secret string, rec *recorder) *sesv2.Client {
	return sesv2.New(sesv2.Options{
		Region:           "eu-west-1",
		BaseEndpoint:     aws.String(url),
		RetryMaxAttempts: 1,
		HTTPClient:       &http.Client{Transport: rec, Timeout: 30 * time.Second},
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: sesKeyID, SecretAccessKey: secret}, nil
		}),
	})
}

func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// SES v2's SendEmail, driven by aws-sdk-go-v2's sesv2 client pointed at
// relayq by BaseEndpoint: Simple content with an attachment and Raw
// content are queued and answered with the queue ID as MessageId; a
// template is refused as SES refuses a bad request; a wrong secret is
// InvalidSignatureException; the same signed request replayed outside the
// clock skew, or with its body altered, is refused; nothing refused is
// queued.
func TestSESv2SDK(t *testing.T) {
	fake := clock.NewFake(time.Now())
	e := startESP(t, envOpts{httpClock: fake, sesKeys: []SESKey{{AccessKeyID: sesKeyID, Secret: sesSecret, APIKey: "app"}}})
	rec := &recorder{}
	c := sesClient(e.url, sesSecret, rec)
	ctx := context.Background()
	simple := &sesv2.SendEmailInput{
		FromEmailAddress: aws.String("App <app@example.org>"),
		Destination:      &types.Destination{ToAddresses: []string{"a@example.net"}},
		Content: &types.EmailContent{Simple: &types.Message{
			Subject:     &types.Content{Data: aws.String("ses simple")},
			Body:        &types.Body{Text: &types.Content{Data: aws.String("Hello")}, Html: &types.Content{Data: aws.String("<p>Hello</p>")}},
			Attachments: []types.Attachment{{FileName: aws.String("a.txt"), ContentType: aws.String("text/plain"), RawContent: []byte("hi")}},
		}},
		EmailTags:            []types.MessageTag{{Name: aws.String("campaign"), Value: aws.String("c1")}},
		ConfigurationSetName: aws.String("transactional"),
	}
	out, err := c.SendEmail(ctx, simple)
	if err != nil || aws.ToString(out.MessageId) == "" {
		t.Fatalf("simple: %v", err)
	}
	// The test's engine may have delivered it already: queued or in the
	// history, the MessageId names a message relayq took.
	if id := aws.ToString(out.MessageId); !e.knows(t, id) {
		t.Errorf("MessageId %q is not a message relayq accepted", id)
	}
	signed, signedBody := rec.last, rec.body

	raw := "From: app@example.org\r\nTo: b@example.net\r\nBcc: hidden@example.net\r\nSubject: ses raw\r\n\r\nRaw body\r\n"
	if _, err := c.SendEmail(ctx, &sesv2.SendEmailInput{Content: &types.EmailContent{Raw: &types.RawMessage{Data: []byte(raw)}}}); err != nil {
		t.Fatalf("raw: %v", err)
	}
	msgs := e.mx.WaitMessages(t, 2, 10*time.Second) // simple; raw (to b and hidden in one transaction)
	for _, m := range msgs {
		if s := string(m.Data); strings.Contains(s, "Subject: ses raw") && strings.Contains(s, "Bcc:") {
			t.Errorf("Bcc delivered:\n%s", s)
		}
	}
	if n := e.obs.accepted.Load(); n != 2 {
		t.Fatalf("%d queued, want 2", n)
	}

	_, err = c.SendEmail(ctx, &sesv2.SendEmailInput{FromEmailAddress: aws.String("app@example.org"),
		Destination: &types.Destination{ToAddresses: []string{"a@example.net"}},
		Content:     &types.EmailContent{Template: &types.Template{TemplateName: aws.String("welcome")}}})
	if apiCode(err) != "BadRequestException" || !strings.Contains(err.Error(), "Content.Template") {
		t.Errorf("template: %v", err)
	}
	if _, err := sesClient(e.url, "wrong-secret", &recorder{}).SendEmail(ctx, simple); apiCode(err) != "InvalidSignatureException" {
		t.Errorf("wrong secret: %v", err)
	}

	// The captured request, as an attacker would send it again.
	replay := func(body []byte) (int, string, string) {
		req := signed.Clone(ctx)
		req.RequestURI, req.Body, req.ContentLength = "", io.NopCloser(bytes.NewReader(body)), int64(len(body))
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("X-Amzn-ErrorType"), string(b)
	}
	tampered := bytes.Replace(signedBody, []byte("a@example.net"), []byte("x@example.net"), 1)
	if st, typ, body := replay(tampered); st != 403 || typ != "InvalidSignatureException" {
		t.Errorf("tampered body: %d %s %s", st, typ, body)
	}
	fake.Advance(6 * time.Minute)
	if st, typ, body := replay(signedBody); st != 403 || typ != "InvalidSignatureException" || !strings.Contains(body, "Signature expired") {
		t.Errorf("replayed after the skew: %d %s %s", st, typ, body)
	}
	if n := e.obs.accepted.Load(); n != 2 {
		t.Errorf("%d queued, want 2: a refused request was queued", n)
	}
}

// knows reports whether id is a message the store holds or has finished.
func (e *testEnv) knows(t *testing.T, id string) bool {
	t.Helper()
	if _, err := e.store.Get(id); err == nil {
		return true
	}
	_, found, err := e.store.History().Find(id)
	if err != nil {
		t.Fatal(err)
	}
	return found
}
