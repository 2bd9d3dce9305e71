package ses

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// MaxSkew is how far a request's signing time may be from the server's
// clock: AWS's own bound, past which a captured request can no longer be
// replayed.
const MaxSkew = 5 * time.Minute

// AuthError is a refused signature: SES's error type and message.
type AuthError struct {
	Type    string // X-Amzn-ErrorType
	Message string
}

func (e *AuthError) Error() string { return e.Type + ": " + e.Message }

const (
	typeMissing      = "MissingAuthenticationTokenException"
	typeIncomplete   = "IncompleteSignatureException"
	typeUnrecognized = "UnrecognizedClientException"
	typeInvalid      = "InvalidSignatureException"
)

// credential is the parsed Authorization header.
type credential struct {
	keyID, date, region, service string
	signedHeaders, signature     string
}

func parseAuthorization(h string) (credential, bool) {
	var c credential
	rest, ok := strings.CutPrefix(h, "AWS4-HMAC-SHA256 ")
	if !ok {
		return c, false
	}
	for _, part := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "Credential":
			f := strings.Split(v, "/")
			if len(f) != 5 || f[4] != "aws4_request" {
				return c, false
			}
			c.keyID, c.date, c.region, c.service = f[0], f[1], f[2], f[3]
		case "SignedHeaders":
			c.signedHeaders = v
		case "Signature":
			c.signature = v
		}
	}
	return c, c.keyID != "" && c.signedHeaders != "" && c.signature != ""
}

// Verify checks r's SigV4 signature over body (the whole request body,
// already read) against the secret of the key it names, and returns the
// key ID. secret looks a key ID up; now is the server's clock.
func Verify(r *http.Request, body []byte, now time.Time, secret func(keyID string) (string, bool)) (string, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", &AuthError{typeMissing, "Missing Authentication Token"}
	}
	c, ok := parseAuthorization(h)
	if !ok {
		return "", &AuthError{typeIncomplete, "Authorization header requires Credential, SignedHeaders and Signature (AWS4-HMAC-SHA256)"}
	}
	key, ok := secret(c.keyID)
	if !ok {
		return "", &AuthError{typeUnrecognized, "The security token included in the request is invalid."}
	}
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil || at.Format("20060102") != c.date || c.service != "ses" {
		return "", &AuthError{typeIncomplete, "X-Amz-Date must be given, signed, and on the credential's date, for service ses"}
	}
	if d := now.Sub(at); d > MaxSkew || d < -MaxSkew {
		return "", &AuthError{typeInvalid, "Signature expired: " + at.Format("20060102T150405Z") + " is now earlier than " +
			now.Add(-MaxSkew).UTC().Format("20060102T150405Z") + " or later than " + now.Add(MaxSkew).UTC().Format("20060102T150405Z")}
	}
	sum := sha256.Sum256(body)
	want, err := resign(r, c, hex.EncodeToString(sum[:]), key, at)
	if err != nil || subtle.ConstantTimeCompare([]byte(want), []byte(h)) != 1 {
		return "", &AuthError{typeInvalid, "The request signature we calculated does not match the signature you provided."}
	}
	return c.keyID, nil
}

// resign signs a copy of r holding only the headers the client signed,
// with aws-sdk-go-v2's signer, and returns the Authorization it makes.
func resign(r *http.Request, c credential, payloadHash, key string, at time.Time) (string, error) {
	cp, err := http.NewRequest(r.Method, r.URL.String(), nil)
	if err != nil {
		return "", err
	}
	cp.URL.Scheme, cp.URL.Host = "http", r.Host
	cp.Host = r.Host
	for _, name := range strings.Split(c.signedHeaders, ";") {
		switch name {
		case "host":
		case "content-length":
			cp.ContentLength = r.ContentLength
		default:
			for _, v := range r.Header.Values(name) {
				cp.Header.Add(name, v)
			}
		}
	}
	creds := aws.Credentials{AccessKeyID: c.keyID, SecretAccessKey: key, SessionToken: r.Header.Get("X-Amz-Security-Token")}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, cp, payloadHash, c.service, c.region, at); err != nil {
		return "", err
	}
	return cp.Header.Get("Authorization"), nil
}
