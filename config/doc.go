// Package config turns the embedded defaults, a YAML file and RELAYQ_*
// environment variables into plain, validated structs for the other
// packages. It is the only package that imports viper.
//
// Invariants:
//
//   - Precedence is environment over file over defaults.yaml. A variable
//     that is set but empty is a value (it empties the key).
//   - defaults.yaml is the schema: a key exists exactly when it appears
//     there, every Load reads each of them, and a file key that is not
//     there is an error, never ignored; so is a RELAYQ_ variable that names
//     no key (except the client-side ones in env.go). Default() equals defaults.yaml
//     (tested), and the file doubles as the annotated example config.
//   - Load returns either a Config that passed every check or an error, one
//     line long, naming the file and key ("config F: retry.max_delay: ...")
//     or the variable ("environment RELAYQ_RETRY_MAX_DELAY: ...").
//   - Durations carry a unit; a bare number other than 0 is refused,
//     because decoded as a time.Duration it would mean nanoseconds.
//   - Each Load uses its own viper instance with the key delimiter "::",
//     so that domain names in delivery.routes keep their dots.
//   - After Load, Hostname is never empty, map keys of Routes are
//     lower-case without a trailing dot, TrustedNetworks are masked
//     prefixes, and the TLS certificate and key loaded as a pair (the
//     submission server loads them again when it starts).
//   - After Load, Shaping passed shaping.Config.Check (shaping.NewPolicy
//     accepts it), and the deprecated delivery.max_conns_per_domain and
//     shaping.defaults.max_connections hold the same value: the old key,
//     when it alone is set, sets the new one.
//   - Every dkim.keys[].private_key_file loaded as a DKIM key (cmd/relayq
//     loads them again for the signer); a bad one is named with its file.
//   - LoadSubmitter (relayq sendmail, run by any user) reads and checks
//     hostname and submission.listen only, and opens no other file than
//     the configuration itself: no key file, whoever may read it.
//   - Warnings never fail a Load: they describe configurations that work
//     but are dangerous, for check-config (--strict) and the start-up log.
//   - LoadSettings lists every key once with its source; Shown never
//     prints a secret: a string under a name with a secret word (token,
//     secret, password, hash, key, auth, credential; not a *_file path)
//     is redacted at any depth, list entries field by field, and any URL
//     keeps its shape without its password, query values or fragment.
//     secrets_test.go walks every key and every entry field to hold this
//     for keys added later.
//   - After Load, Cluster.NodeName is never empty ("" means the host name)
//     and Cluster.RedisURL is "" or a redis:// or rediss:// URL.
//   - No error message shows the userinfo, query or fragment of a URL
//     (redact.URL): errors reach the log when a reload is refused.
package config
