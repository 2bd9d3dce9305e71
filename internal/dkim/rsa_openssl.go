//go:build openssl && cgo

package dkim

/*
#cgo LDFLAGS: -lcrypto
#include <openssl/evp.h>
#include <openssl/rsa.h>

// relayq_sign makes an RSASSA-PKCS1-v1_5 signature of a SHA-256 digest;
// 1 on success.
static int relayq_sign(EVP_PKEY *pkey, const unsigned char *digest, size_t dlen,
                       unsigned char *sig, size_t *siglen) {
	EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new(pkey, NULL);
	int ok = ctx != NULL &&
		EVP_PKEY_sign_init(ctx) == 1 &&
		EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_PADDING) == 1 &&
		EVP_PKEY_CTX_set_signature_md(ctx, EVP_sha256()) == 1 &&
		EVP_PKEY_sign(ctx, sig, siglen, digest, dlen) == 1;
	EVP_PKEY_CTX_free(ctx);
	return ok;
}

static EVP_PKEY *relayq_load(const unsigned char *der, long len) {
	return d2i_PrivateKey(EVP_PKEY_RSA, NULL, &der, len);
}
*/
import "C"

import (
	"crypto"
	"crypto/rsa"
	"crypto/x509"
	"errors"
	"io"
	"runtime"
	"unsafe"
)

// RSABackend names the code that makes RSA signatures in this build.
const RSABackend = "openssl"

// rsaSigner is the signer the Signer uses for an RSA key: libcrypto's,
// which signs in about a quarter of crypto/rsa's CPU time on amd64
// (docs/decisions/0014-rsa-signing.md). PKCS #1 v1.5 signatures are
// deterministic, so it makes exactly the bytes crypto/rsa would. A key
// libcrypto will not load is signed by crypto/rsa, as in a build without
// the tag.
func rsaSigner(k *rsa.PrivateKey) crypto.Signer {
	pc := precomputed(k) // the marshaller fills in what is missing: never on the caller's key
	der := x509.MarshalPKCS1PrivateKey(pc)
	pkey := C.relayq_load((*C.uchar)(unsafe.Pointer(&der[0])), C.long(len(der)))
	clear(der)
	if pkey == nil {
		return pc
	}
	s := &osslSigner{pkey: pkey, fallback: pc}
	runtime.AddCleanup(s, func(p *C.EVP_PKEY) { C.EVP_PKEY_free(p) }, pkey)
	return s
}

// osslSigner signs SHA-256 digests with libcrypto; anything else with
// crypto/rsa.
type osslSigner struct {
	pkey     *C.EVP_PKEY
	fallback *rsa.PrivateKey
}

func (s *osslSigner) Public() crypto.PublicKey { return s.fallback.Public() }

// Sign signs digest, a SHA-256 hash, as rsa.SignPKCS1v15 does; rand is
// unused, as it is there (libcrypto blinds with its own generator).
func (s *osslSigner) Sign(rand io.Reader, digest []byte, opts crypto.SignerOpts) ([]byte, error) {
	if opts.HashFunc() != crypto.SHA256 || len(digest) != crypto.SHA256.Size() {
		return s.fallback.Sign(rand, digest, opts)
	}
	sig := make([]byte, s.fallback.Size())
	n := C.size_t(len(sig))
	ok := C.relayq_sign(s.pkey, (*C.uchar)(unsafe.Pointer(&digest[0])), C.size_t(len(digest)),
		(*C.uchar)(unsafe.Pointer(&sig[0])), &n)
	runtime.KeepAlive(s)
	if ok != 1 || int(n) != len(sig) {
		return nil, errors.New("dkim: libcrypto could not sign")
	}
	return sig, nil
}
