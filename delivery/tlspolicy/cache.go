package tlspolicy

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/relayq/relayq/delivery/mtasts"
)

// PolicyStore keeps opaque policy bytes by domain; queue.TLS is one
// (its tls_policies bucket, checksummed).
type PolicyStore interface {
	Policy(domain string) ([]byte, bool, error)
	PutPolicy(domain string, v []byte) error
}

// StoreCache is an mtasts.Cache on a PolicyStore, so policies outlive a
// restart for their max_age.
type StoreCache struct{ Store PolicyStore }

// storedPolicy is the JSON form of an mtasts.Cached.
type storedPolicy struct {
	Mode    string    `json:"mode"`
	MX      []string  `json:"mx"`
	MaxAge  int64     `json:"max_age"` // seconds
	ID      string    `json:"id"`
	Fetched time.Time `json:"fetched"`
}

// Get implements mtasts.Cache. A stored value that does not decode to a
// valid policy is an error (the caller then fetches afresh).
func (c StoreCache) Get(_ context.Context, domain string) (mtasts.Cached, bool, error) {
	b, ok, err := c.Store.Policy(domain)
	if err != nil || !ok {
		return mtasts.Cached{}, false, err
	}
	return decodeCached(b)
}

// decodeCached reads a stored policy, checking it as the parser would.
func decodeCached(b []byte) (mtasts.Cached, bool, error) {
	var sp storedPolicy
	if err := json.Unmarshal(b, &sp); err != nil {
		return mtasts.Cached{}, false, fmt.Errorf("tlspolicy: stored policy: %w", err)
	}
	if strings.ContainsAny(sp.Mode+strings.Join(sp.MX, ""), "\r\n") {
		return mtasts.Cached{}, false, fmt.Errorf("tlspolicy: stored policy: line break in a field")
	}
	text := fmt.Sprintf("version: STSv1\nmode: %s\nmax_age: %d\n", sp.Mode, sp.MaxAge)
	for _, mx := range sp.MX {
		text += "mx: " + mx + "\n"
	}
	p, err := mtasts.ParsePolicy([]byte(text))
	if err != nil || sp.MaxAge < 0 {
		return mtasts.Cached{}, false, fmt.Errorf("tlspolicy: stored policy: %v", err)
	}
	return mtasts.Cached{Policy: p, ID: sp.ID, Fetched: sp.Fetched}, true, nil
}

// Put implements mtasts.Cache.
func (c StoreCache) Put(_ context.Context, domain string, cp mtasts.Cached) error {
	b, err := json.Marshal(storedPolicy{
		Mode: string(cp.Policy.Mode), MX: cp.Policy.MX, MaxAge: int64(cp.Policy.MaxAge / time.Second),
		ID: cp.ID, Fetched: cp.Fetched,
	})
	if err != nil {
		return err
	}
	return c.Store.PutPolicy(domain, b)
}
