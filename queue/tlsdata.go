package queue

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"sort"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TLS is the store's TLS data: cached MTA-STS policies and the per-domain
// daily TLS-RPT counts.
type TLS struct{ s *Store }

// TLS returns the store's TLS data.
func (s *Store) TLS() TLS { return TLS{s} }

// Buckets of verified-TLS data (cached MTA-STS policies, TLS-RPT session
// counts); see doc.go. Neither holds mail: Salvage leaves them behind, and
// a damaged value is reported, not quarantined.
var (
	// bucketTLSPolicies caches MTA-STS policies for their max_age
	// (domain -> CRC-32C + the caller's bytes).
	bucketTLSPolicies = []byte("tls_policies")
	// bucketTLSResults counts TLS sessions per domain and UTC day for
	// TLS-RPT (domain + 0x00 + YYYY-MM-DD -> CRC-32C + JSON []TLSCount).
	bucketTLSResults = []byte("tls_results")
)

// sealed is the stored form of v: its CRC-32C, then v.
func sealed(v []byte) []byte {
	out := binary.BigEndian.AppendUint32(make([]byte, 0, len(v)+4), crc32.Checksum(v, castagnoli))
	return append(out, v...)
}

// unseal checks and strips the checksum of a stored value.
func unseal(b []byte) ([]byte, error) {
	if len(b) < 4 {
		return nil, fmt.Errorf("%w: value shorter than its checksum", ErrDamaged)
	}
	if got, want := crc32.Checksum(b[4:], castagnoli), binary.BigEndian.Uint32(b); got != want {
		return nil, fmt.Errorf("%w: checksum mismatch (stored %08x, computed %08x)", ErrDamaged, want, got)
	}
	return b[4:], nil
}

// Policy returns the cached policy bytes of domain; ok is false when
// none is stored. A damaged value is an error wrapping ErrDamaged.
func (d TLS) Policy(domain string) (v []byte, ok bool, err error) {
	s := d.s
	err = s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketTLSPolicies)
		if b == nil {
			return nil
		}
		raw := b.Get([]byte(domain))
		if raw == nil {
			return nil
		}
		plain, err := unseal(raw)
		if err != nil {
			return fmt.Errorf("queue: tls policy of %s: %w", domain, err)
		}
		v, ok = append([]byte(nil), plain...), true
		return nil
	})
	return v, ok, err
}

// PutPolicy stores the policy bytes of domain.
func (d TLS) PutPolicy(domain string, v []byte) error {
	s := d.s
	val := sealed(v)
	return s.submit(func(w *writeTx) error {
		b, err := w.bucket(bucketTLSPolicies)
		if err != nil {
			return err
		}
		return b.Put([]byte(domain), val)
	})
}

// TLSResult is one TLS session (or refused MX) for TLS-RPT: the policy it
// ran under ("sts", "tlsa", "no-policy-found"), the MX host, and the RFC
// 8460 result type of its failure ("" for success).
type TLSResult struct {
	Policy, MX, Failure string
}

// TLSCount is how many sessions of one domain and day had one result.
type TLSCount struct {
	TLSResult
	N int64 `json:"n"`
}

// tlsDayKey is the key of domain's counts on the UTC day of at.
func tlsDayKey(domain string, at time.Time) []byte {
	return []byte(strings.ToLower(domain) + "\x00" + at.UTC().Format(time.DateOnly))
}

// TLSTally is one TLS result to count for TLS-RPT (RFC 8460): domain's
// result on the UTC day of At.
type TLSTally struct {
	Domain string
	At     time.Time
	Result TLSResult
}

// Record counts one TLS result of domain on the UTC day of at, in a
// commit of its own. An attempt's count goes with its outcome instead
// (Outcome.TLSRPT); this is for a caller that has no Record to join.
func (d TLS) Record(domain string, at time.Time, r TLSResult) error {
	s := d.s
	t := TLSTally{Domain: domain, At: at, Result: r}
	return s.submit(func(w *writeTx) error { return w.countTLS(t) })
}

// countTLS adds t to its day's counts.
func (w *writeTx) countTLS(t TLSTally) error {
	key := tlsDayKey(t.Domain, t.At)
	b, err := w.bucket(bucketTLSResults)
	if err != nil {
		return err
	}
	counts, err := decodeTLSCounts(b.Get(key))
	if err != nil {
		counts = nil // a damaged day starts over rather than block mail
	}
	found := false
	for i := range counts {
		if counts[i].TLSResult == t.Result {
			counts[i].N++
			found = true
		}
	}
	if !found {
		counts = append(counts, TLSCount{TLSResult: t.Result, N: 1})
	}
	js, err := json.Marshal(counts)
	if err != nil {
		return err
	}
	return b.Put(key, sealed(js))
}

// Day returns domain's counts on the UTC day of day, sorted.
func (d TLS) Day(domain string, day time.Time) ([]TLSCount, error) {
	s := d.s
	var counts []TLSCount
	err := s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketTLSResults)
		if b == nil {
			return nil
		}
		var err error
		counts, err = decodeTLSCounts(b.Get(tlsDayKey(domain, day)))
		return err
	})
	sort.Slice(counts, func(i, j int) bool {
		a, b := counts[i].TLSResult, counts[j].TLSResult
		if a.Policy != b.Policy {
			return a.Policy < b.Policy
		}
		if a.MX != b.MX {
			return a.MX < b.MX
		}
		return a.Failure < b.Failure
	})
	return counts, err
}

// decodeTLSCounts reads a stored day; nil bytes are an empty day.
func decodeTLSCounts(raw []byte) ([]TLSCount, error) {
	if raw == nil {
		return nil, nil
	}
	js, err := unseal(raw)
	if err != nil {
		return nil, fmt.Errorf("queue: tls results: %w", err)
	}
	var counts []TLSCount
	if err := json.Unmarshal(js, &counts); err != nil {
		return nil, fmt.Errorf("queue: tls results: %w: %w", ErrDamaged, err)
	}
	for _, c := range counts {
		if c.N < 0 {
			return nil, fmt.Errorf("queue: tls results: %w", errors.Join(ErrDamaged, errors.New("negative count")))
		}
	}
	return counts, nil
}
