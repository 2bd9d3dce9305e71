package httpsubmit

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/relayq/relayq/internal/tenant"
	"github.com/relayq/relayq/submission"
)

// get GETs path of the API with the bearer key; status and body.
func (e *testEnv) get(t *testing.T, path, key string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, strings.TrimSuffix(e.url, Path)+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// Separation is enforced: a tenant's key reads its own tenant's messages
// and events; another tenant's message is 404, exactly as an unknown one,
// and its events are not listed; reads need a credential.
func TestTenantReadsSeparated(t *testing.T) {
	const billingKey, shopKey = "billing.s3cretS3cret", "shop.s3cretS3cret"
	e := start(t, envOpts{insecure: true,
		keys:    []submission.APIKey{{Name: "billing", KeyHash: bcryptHash(t, billingKey)}, {Name: "shop", KeyHash: bcryptHash(t, shopKey)}},
		tenants: tenant.New([]tenant.Tenant{{Name: "billing", APIKeys: []string{"billing"}}, {Name: "shop", APIKeys: []string{"shop"}}}),
	})
	raw := []byte("From: a@example.org\r\nTo: b@example.net\r\nSubject: s\r\n\r\nhi\r\n")
	mine := e.post(t, "", "message/rfc822", "Bearer "+billingKey, raw)
	theirs := e.post(t, "", "message/rfc822", "Bearer "+shopKey, raw)
	if mine.status != 202 || theirs.status != 202 {
		t.Fatalf("posts: %d %d", mine.status, theirs.status)
	}
	status, body := e.get(t, Path+"/"+mine.ok.QueueID, billingKey)
	var v messageView
	if status != 200 || json.Unmarshal(body, &v) != nil || v.QueueID != mine.ok.QueueID || v.Tenant != "billing" {
		t.Fatalf("own message: %d %s", status, body)
	}
	status, other := e.get(t, Path+"/"+theirs.ok.QueueID, billingKey)
	_, unknown := e.get(t, Path+"/18ECAF2DCCF80C22C6A8", billingKey)
	if status != 404 || string(other) != string(unknown) {
		t.Fatalf("another tenant's message: %d %s; an unknown one: %s", status, other, unknown)
	}
	status, body = e.get(t, "/api/v1/events", billingKey)
	var page eventPage
	if status != 200 || json.Unmarshal(body, &page) != nil || len(page.Events) == 0 {
		t.Fatalf("events: %d %s", status, body)
	}
	for _, ev := range page.Events {
		if ev.QueueID != mine.ok.QueueID || ev.Tenant != "billing" {
			t.Errorf("billing's key sees %+v", ev)
		}
	}
	if status, _ := e.get(t, Path+"/"+mine.ok.QueueID, ""); status != 401 {
		t.Errorf("read without a credential: %d, want 401", status)
	}
}
