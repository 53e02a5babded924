// Package signature signs blobs (a DR manifest, a release checksums file, a drill report's
// evidence) with a long-lived key and verifies them offline against public keys: each signature is
// a Sigstore bundle that `cosign verify-blob` verifies too, and cosign's bundles verify here.
//
// A bundle is Sigstore's v0.3 (media type application/vnd.dev.sigstore.bundle.v0.3+json) holding a
// message signature over the blob and the signer's public-key hint, with no certificate, no
// transparency-log entry and no timestamp: what `cosign sign-blob --key K --bundle B` writes with
// an empty signing config, so `cosign verify-blob --key K.pub --bundle B --insecure-ignore-tlog
// BLOB` verifies it, and what this package verifies cosign's bundles by.
//
// Key ids: a key's id is the first 16 hex digits of the SHA-256 of its public key's DER
// SubjectPublicKeyInfo (what `openssl pkey -pubin -in K.pub -outform DER | sha256sum | cut
// -c1-16` prints). A bundle's hint is Sigstore's form of the same hash (base64 of all 32 bytes),
// so the key id a bundle claims is read from its hint without trusting it.
//
// Keys: PEM PKCS#8 ("PRIVATE KEY": ECDSA P-256/P-384/P-521, Ed25519, RSA), SEC 1 ("EC PRIVATE
// KEY"), and cosign's encrypted format ("ENCRYPTED SIGSTORE PRIVATE KEY" / "ENCRYPTED COSIGN
// PRIVATE KEY", scrypt + secretbox, as `cosign generate-key-pair` writes it) with a password.
// Ed25519 signs as Ed25519ph (SHA-512 pre-hash), Sigstore's rule for message signatures.
// Nothing here prints, logs or returns key material: errors name the file and the key id only.
package signature
