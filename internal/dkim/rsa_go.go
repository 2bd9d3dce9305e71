//go:build !openssl || !cgo

package dkim

import (
	"crypto"
	"crypto/rsa"
)

// rsaSigner is the signer the Signer uses for an RSA key: crypto/rsa, on a
// copy with its CRT values precomputed. A build with the openssl tag (and
// cgo) signs through libcrypto instead (rsa_openssl.go).
func rsaSigner(k *rsa.PrivateKey) crypto.Signer { return precomputed(k) }

// RSABackend names the code that makes RSA signatures in this build.
const RSABackend = "go"
