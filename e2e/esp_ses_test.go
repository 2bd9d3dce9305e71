package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/aws/aws-sdk-go-v2/service/sesv2/types"
	"github.com/aws/smithy-go"
	"golang.org/x/crypto/bcrypt"

	"github.com/relayq/relayq/smtptest"
)

// The built relay takes SES v2's SendEmail from aws-sdk-go-v2's sesv2
// client (BaseEndpoint) with the access key configured in
// submission.ses_keys, its secret read from its file: the message is
// delivered; a message waiting in the queue has the stream the API key
// gives; a wrong secret is InvalidSignatureException and nothing of it is
// delivered.
func TestSESv2SDKAgainstBinary(t *testing.T) {
	mx := smtptest.NewServer(t, smtptest.Reply("rcpt:held@=451 4.3.0 Try later"))
	const keyID, secret = "AKIARELAYQE2E0000001", "e2e/ses/secret/0123456789abcdef"
	hash, err := bcrypt.GenerateFromPassword([]byte("app.unused-bearer-secret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	r := newRelay(t, mx.Addr(), heldRetries, "streams:\n  - {name: default, weight: 1}\n  - {name: transactional, weight: 1}\n")
	secretFile := filepath.Join(r.dir, "ses.secret")
	if err := os.WriteFile(secretFile, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r.httpURL = r.withHTTP(t)
	r.admin, r.adminURL = r.withAdmin(t)
	rewriteConfig(t, r, map[string]string{"submission:\n": fmt.Sprintf("submission:\n  allow_insecure_auth: true\n"+
		"  api_keys:\n    - {name: app, key_hash: %q, stream: transactional}\n"+
		"  ses_keys:\n    - {access_key_id: %s, secret_file: %q, api_key: app}\n", hash, keyID, secretFile)})
	r.mustStart(t)
	base := strings.TrimSuffix(r.httpURL, "/api/v1/messages")
	waitDial(t, strings.TrimPrefix(base, "http://"))
	client := func(s string) *sesv2.Client {
		return sesv2.New(sesv2.Options{Region: "eu-west-1", BaseEndpoint: aws.String(base), RetryMaxAttempts: 1,
			HTTPClient: &http.Client{Timeout: 30 * time.Second},
			Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
				return aws.Credentials{AccessKeyID: keyID, SecretAccessKey: s}, nil
			})})
	}
	in := func(subject, to string) *sesv2.SendEmailInput {
		return &sesv2.SendEmailInput{FromEmailAddress: aws.String("app@example.org"),
			Destination: &types.Destination{ToAddresses: []string{to}},
			Content: &types.EmailContent{Simple: &types.Message{Subject: &types.Content{Data: aws.String(subject)},
				Body: &types.Body{Text: &types.Content{Data: aws.String("Hello")}}}}}
	}
	out, err := client(secret).SendEmail(context.Background(), in("tok-ses-ok", "rcpt@example.net"))
	if err != nil || aws.ToString(out.MessageId) == "" {
		t.Fatalf("SendEmail: %v", err)
	}
	_, err = client("wrong-secret-0123456789").SendEmail(context.Background(), in("tok-ses-refused", "rcpt@example.net"))
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "InvalidSignatureException" {
		t.Errorf("wrong secret: %v", err)
	}
	mx.WaitFor(t, 30*time.Second, func() bool { return deliveredTokens(mx)["tok-ses-ok"] == 1 })
	if deliveredTokens(mx)["tok-ses-refused"] != 0 {
		t.Error("the request with a wrong secret was delivered")
	}
	held, err := client(secret).SendEmail(context.Background(), in("tok-ses-held", "held@example.net"))
	if err != nil {
		t.Fatal(err)
	}
	waitDial(t, strings.TrimPrefix(r.adminURL, "http://"))
	m, err := r.admin.Show(context.Background(), aws.ToString(held.MessageId))
	if err != nil || m.Stream != "transactional" {
		t.Errorf("the waiting message: %+v, %v; want the API key's stream transactional", m, err)
	}
}
