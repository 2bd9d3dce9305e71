package shaping

// Text forms, so that Suspension (for GET /api/v1/shaping and `relayq
// queue suspensions --json`) encodes as {"Scope":"provider:google",
// "Action":"suspend",...} and a client decodes it back.

// MarshalText writes "provider:NAME" or "domain:NAME".
func (s Scope) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads what MarshalText writes.
func (s *Scope) UnmarshalText(b []byte) error {
	v, err := ParseScope(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// MarshalText writes "provider" or "domain".
func (k ScopeKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText reads what MarshalText writes.
func (k *ScopeKind) UnmarshalText(b []byte) error {
	v, err := ParseScopeKind(string(b))
	if err != nil {
		return err
	}
	*k = v
	return nil
}

// MarshalText writes "suspend", "throttle" or "bounce".
func (a Action) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText reads what MarshalText writes.
func (a *Action) UnmarshalText(b []byte) error {
	v, err := ParseAction(string(b))
	if err != nil {
		return err
	}
	*a = v
	return nil
}

// MarshalText writes "rate", "connections" or "suspended".
func (r WaitReason) MarshalText() ([]byte, error) { return []byte(r.String()), nil }
