package verify

import (
	"fmt"
	"strings"

	"lifeboat/manifest"
	"lifeboat/providers"
	"lifeboat/providers/checksum"
)

// emptySHA256 and emptyBLAKE3 are the digests of no bytes.
const (
	emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	emptyBLAKE3 = "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"
)

// want returns the manifest's value of one algorithm ("" if it records none).
func want(f manifest.File, alg providers.Algorithm) string { return f.Sums.Get(alg) }

// expectedFacts are the manifest's size and SHA-256, plus its value of every algorithm the
// actual facts carry, so that the two can be read side by side.
func expectedFacts(f manifest.File, actual Facts) Facts {
	size := f.Size
	e := Facts{Size: &size, Sums: checksum.Sums{SHA256: f.Sums.SHA256}}
	for _, alg := range checksum.All {
		if actual.Get(alg) != "" {
			e.Set(alg, want(f, alg))
		}
	}
	return e
}

func missing(f manifest.File, source string) FileResult {
	return FileResult{Path: f.Path, Status: StatusMissing, Expected: expectedFacts(f, Facts{}),
		Detail: "not in the replica (" + source + ")"}
}

// judgeQuick compares one object's metadata (from a listing or a Stat) with its manifest entry.
// needStat is true when the verdict is not final and a Stat could settle it: the store's Stat
// reports checksums its listing does not (S3), or an S3 ETag differs from the manifest's MD5 and
// only a Stat tells whether the object is encrypted so that the ETag is no MD5.
func judgeQuick(f manifest.File, obj providers.Object, source string, caps providers.Capabilities) (res FileResult, needStat bool) {
	canStat := source == "listing" && statAddsChecksums(caps)
	noNative := len(caps.ListChecksums) == 0 && len(caps.WriteChecksums) == 0
	size := obj.Size
	actual := Facts{Size: &size, Source: source}
	var equal, differ, composite, etagUnknown []string
	for _, c := range obj.Checksums {
		exp := want(f, c.Algorithm)
		if exp == "" || actual.Get(c.Algorithm) != "" {
			continue // the manifest has no such value (SHA-1), or already seen
		}
		actual.Set(c.Algorithm, c.Value)
		switch {
		case c.Composite:
			composite = append(composite, fmt.Sprintf("%s %q", c.Algorithm, c.Value))
		case checksum.Equal(c.Algorithm, c.Value, exp):
			equal = append(equal, string(c.Algorithm))
		case c.FromETag && (obj.Encryption == providers.EncryptionUnknown ||
			obj.Encryption == providers.EncryptionKMS || obj.Encryption == providers.EncryptionCustomerKey):
			// An ETag is the MD5 only for unencrypted, SSE-S3 objects; a listing does not say.
			etagUnknown = append(etagUnknown, string(c.Algorithm))
		default:
			differ = append(differ, string(c.Algorithm))
		}
	}
	res = FileResult{Path: f.Path, Actual: actual, Expected: expectedFacts(f, actual)}
	switch {
	case obj.Size != f.Size:
		res.Status = StatusSizeMismatch
		res.Detail = fmt.Sprintf("size differs (%s)", source)
	case len(differ) > 0:
		res.Status = StatusChecksumMismatch
		res.Detail = fmt.Sprintf("%s %s (%s)", strings.Join(differ, ", "), verb(len(differ), "differs", "differ"), source)
	case len(etagUnknown) > 0 && source == "listing":
		res.Status = StatusUnverified
		res.Detail = "the ETag differs from the manifest's MD5 but may not be an MD5 (SSE-KMS/SSE-C)"
		return res, true
	case len(equal) > 0:
		res.Status = StatusOK
		res.Detail = fmt.Sprintf("%s %s (%s)", strings.Join(equal, ", "), verb(len(equal), "matches", "match"), source)
	case f.Size == 0 && strings.EqualFold(f.Sums.SHA256, emptySHA256):
		res.Status = StatusOK
		res.Detail = "empty, as the manifest says: the size proves the content"
	default:
		res.Status = StatusUnverified
		switch {
		case len(composite) > 0:
			res.Detail = fmt.Sprintf("size matches, but only composite checksums of parts exist (%s); run --deep", strings.Join(composite, ", "))
		case len(etagUnknown) > 0:
			res.Detail = fmt.Sprintf("size matches; the ETag is not an MD5 (object is %s-encrypted) and no other checksum exists; run --deep", obj.Encryption)
		case noNative:
			res.Detail = "size matches; this store keeps no checksums (local files); run --deep"
		default:
			res.Detail = "size matches, but the store keeps no checksum for this object; run --deep"
		}
		return res, canStat
	}
	return res, false
}

func verb(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
