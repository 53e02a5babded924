//go:build integration

package verify_test

import (
	"bytes"
	"encoding/base64"
	"lifeboat/internal/testbed"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"cloud.google.com/go/storage"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/fsouza/fake-gcs-server/fakestorage"

	"lifeboat/internal/faultproxy"
	"lifeboat/manifest"
	"lifeboat/providers"
	"lifeboat/verify"
)

var (
	quickOK = []verify.Status{verify.StatusOK}
	// Local files carry no native checksum: quick verification cannot prove them.
	quickOKOrUnverified = []verify.Status{verify.StatusOK, verify.StatusUnverified}
)

// A clean replica verifies OK in full on every provider, quick and deep; quick verification
// makes one listing request (the bundle's prefix, fewer than 1,000 objects) and stats only what
// a listing cannot prove (S3 objects uploaded in parts, whose ETag is not an MD5).
func TestCleanReplica(t *testing.T) {
	t.Parallel()
	f := testbed.Sample(t, "large")
	for _, b := range testbed.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			prefix := testbed.FreshPrefix("clean")
			testbed.Seed(t, b.Open(t, prefix, nil), f)
			in := faultproxy.New() // no faults: counts requests
			s := b.Open(t, prefix, in.Client())

			q := verify.Quick(testbed.Ctx(t), f.M, s, testbed.VerifyOptions())
			want := verify.ReplicaOK
			if !b.Native {
				want = verify.ReplicaUnverified
			}
			if q.Status != want || q.Counts[verify.StatusOK]+q.Counts[verify.StatusUnverified] != len(f.M.Files) {
				t.Fatalf("quick: status %s, want %s\n%s", q.Status, want, testbed.Dump(q))
			}
			if b.Native {
				testbed.ExpectStatuses(t, q, nil, quickOK...)
			}
			counts := in.Counts()
			if b.Name != "file" {
				if counts[faultproxy.OpList] != 1 {
					t.Errorf("quick verify made %d listing requests, want 1 (one page of the bundle's prefix)", counts[faultproxy.OpList])
				}
				wantStats := 0
				if b.Name == "s3" {
					wantStats = len(f.Shards()) // uploaded in parts: the ETag is not an MD5
				}
				if counts[faultproxy.OpStat] != wantStats || counts[faultproxy.OpRead] != 0 {
					t.Errorf("quick verify made %d stats and %d reads, want %d and 0", counts[faultproxy.OpStat], counts[faultproxy.OpRead], wantStats)
				}
			}

			d := verify.Deep(testbed.Ctx(t), f.M, s, testbed.VerifyOptions())
			if d.Status != verify.ReplicaOK {
				t.Fatalf("deep: status %s\n%s", d.Status, testbed.Dump(d))
			}
			testbed.ExpectStatuses(t, d, nil, verify.StatusOK)
			var total int64
			for _, file := range f.M.Files {
				total += file.Size
			}
			if d.BytesRead != total {
				t.Errorf("deep read %d bytes, want %d", d.BytesRead, total)
			}
			for _, fr := range d.Files {
				if !testbed.ProvenByRead(fr) {
					t.Errorf("deep %s: actual %+v, expected %+v", fr.Path, fr.Actual, fr.Expected)
				}
			}
		})
	}
}

// Planted corruption on every provider: a missing file, a truncated file, same-size bit flips (in
// a small object and in one uploaded in parts), swapped shards and an extra file.
func TestPlantedCorruption(t *testing.T) {
	t.Parallel()
	large, small := testbed.Sample(t, "large"), testbed.Sample(t, "small")
	for _, b := range testbed.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			s := b.Open(t, testbed.FreshPrefix("corrupt"), nil)
			testbed.Seed(t, s, large)
			shard := large.Shards()[1]
			testbed.Del(t, s, "model/tokenizer.json")
			gen := large.Data(t, "model/generation_config.json")
			testbed.Put(t, s, "model/generation_config.json", gen[:len(gen)/2], providers.Checksums{})
			testbed.Put(t, s, "model/config.json", testbed.FlipBit(large.Data(t, "model/config.json"), 100), providers.Checksums{})
			testbed.Put(t, s, shard, testbed.FlipBit(large.Data(t, shard), 3<<20), providers.Checksums{})
			testbed.Put(t, s, "model/notes.txt", []byte("not part of the bundle\n"), providers.Checksums{})

			flipped := verify.StatusChecksumMismatch
			if !b.Native {
				flipped = verify.StatusUnverified
			}
			q := verify.Quick(testbed.Ctx(t), large.M, s, testbed.VerifyOptions())
			testbed.ExpectStatuses(t, q, map[string][]verify.Status{
				"model/tokenizer.json":         {verify.StatusMissing},
				"model/generation_config.json": {verify.StatusSizeMismatch},
				"model/config.json":            {flipped},
				shard:                          {flipped},
				"model/notes.txt":              {verify.StatusExtra},
			}, quickOKOrUnverified...)
			if q.Status != verify.ReplicaFailed {
				t.Errorf("quick: replica %s, want FAILED", q.Status)
			}
			checkMismatchFacts(t, testbed.ByPath(q))

			d := verify.Deep(testbed.Ctx(t), large.M, s, testbed.VerifyOptions())
			testbed.ExpectStatuses(t, d, map[string][]verify.Status{
				"model/tokenizer.json":         {verify.StatusMissing},
				"model/generation_config.json": {verify.StatusSizeMismatch},
				"model/config.json":            {verify.StatusCorrupt},
				shard:                          {verify.StatusCorrupt},
				"model/notes.txt":              {verify.StatusExtra},
			}, verify.StatusOK)
			if d.Status != verify.ReplicaFailed || d.Counts[verify.StatusExtra] != 1 {
				t.Errorf("deep: replica %s counts %v", d.Status, d.Counts)
			}
			if c := testbed.ByPath(d)[shard]; (b.Name == "s3" || b.Name == "gcs") && !strings.Contains(c.Detail, "written with these bytes") {
				t.Errorf("deep %s: detail %q does not say the store's checksum describes the bad bytes", shard, c.Detail)
			}

			// Swapped shards: each shard holds the other's bytes.
			s2 := b.Open(t, testbed.FreshPrefix("swapped"), nil)
			testbed.Seed(t, s2, small)
			sh := small.Shards()
			testbed.Put(t, s2, sh[0], small.Data(t, sh[1]), providers.Checksums{})
			testbed.Put(t, s2, sh[1], small.Data(t, sh[0]), providers.Checksums{})
			swapped := []verify.Status{verify.StatusSizeMismatch, verify.StatusChecksumMismatch}
			if !b.Native {
				swapped = append(swapped, verify.StatusUnverified) // only if the sizes happen to be equal
			}
			q = verify.Quick(testbed.Ctx(t), small.M, s2, testbed.VerifyOptions())
			testbed.ExpectStatuses(t, q, map[string][]verify.Status{sh[0]: swapped, sh[1]: swapped}, quickOKOrUnverified...)
			d = verify.Deep(testbed.Ctx(t), small.M, s2, testbed.VerifyOptions())
			testbed.ExpectStatuses(t, d, map[string][]verify.Status{
				sh[0]: {verify.StatusSizeMismatch, verify.StatusCorrupt}, sh[1]: {verify.StatusSizeMismatch, verify.StatusCorrupt},
			}, verify.StatusOK)
		})
	}
}

// checkMismatchFacts: a size or checksum mismatch says exactly what was expected and found.
func checkMismatchFacts(t *testing.T, files map[string]verify.FileResult) {
	t.Helper()
	for _, f := range files {
		switch f.Status {
		case verify.StatusSizeMismatch:
			if f.Expected.Size == nil || f.Actual.Size == nil || *f.Expected.Size == *f.Actual.Size {
				t.Errorf("%s: SIZE_MISMATCH without both sizes: %+v vs %+v", f.Path, f.Expected, f.Actual)
			}
		case verify.StatusChecksumMismatch:
			differs := false
			for _, pair := range [][2]string{{f.Expected.MD5, f.Actual.MD5}, {f.Expected.CRC32C, f.Actual.CRC32C},
				{f.Expected.CRC64NVME, f.Actual.CRC64NVME}, {f.Expected.CRC32, f.Actual.CRC32}, {f.Expected.SHA256, f.Actual.SHA256}, {f.Expected.BLAKE3, f.Actual.BLAKE3}} {
				differs = differs || (pair[1] != "" && pair[0] != pair[1])
			}
			if !differs || f.Actual.Source == "" {
				t.Errorf("%s: CHECKSUM_MISMATCH without the differing values: %+v vs %+v", f.Path, f.Expected, f.Actual)
			}
		}
	}
}

// Objects that carry no comparable native checksum are UNVERIFIED in quick mode (never OK) and
// OK or CORRUPT in deep mode: S3 multipart uploads with COMPOSITE checksums or none, Azure blobs
// committed from blocks without Content-MD5. GCS always has a full-object CRC32C, composite
// objects included.
func TestUnverifiedObjects(t *testing.T) {
	t.Parallel()
	f := testbed.Sample(t, "large")
	sh := f.Shards()
	good, bad := f.Data(t, sh[0]), testbed.FlipBit(f.Data(t, sh[1]), 12345)

	t.Run("s3", func(t *testing.T) {
		t.Parallel()
		b := testbed.S3Backend(t)
		prefix := testbed.FreshPrefix("unverified")
		s := b.Open(t, prefix, nil)
		testbed.Seed(t, s, f)
		client := b.S3.Client()
		s3Multipart(t, client, prefix+"/"+sh[0], good, types.ChecksumAlgorithmCrc32)
		s3Multipart(t, client, prefix+"/"+sh[1], bad, types.ChecksumAlgorithmCrc32)
		s3Multipart(t, client, prefix+"/model/README.md", f.Data(t, "model/README.md"), "")

		// Like S3 since 2025, versitygw gives a multipart upload sent without any checksum a
		// full-object CRC64NVME: README.md is proven by a Stat.
		q := verify.Quick(testbed.Ctx(t), f.M, s, testbed.VerifyOptions())
		testbed.ExpectStatuses(t, q, map[string][]verify.Status{
			sh[0]: {verify.StatusUnverified}, sh[1]: {verify.StatusUnverified}, "model/README.md": {verify.StatusOK},
		}, verify.StatusOK)
		if q.Status != verify.ReplicaUnverified {
			t.Errorf("quick: replica %s, want UNVERIFIED", q.Status)
		}
		if d := testbed.ByPath(q)[sh[0]].Detail; !strings.Contains(d, "composite") {
			t.Errorf("quick %s: detail %q does not name the composite checksum", sh[0], d)
		}
		// An object from before S3 kept default checksums has only its "-N" ETag.
		in := faultproxy.New(&faultproxy.Rule{Match: faultproxy.Ops(faultproxy.OpStat), Action: faultproxy.Header(stripS3Checksums)})
		q = verify.Quick(testbed.Ctx(t), f.M, b.Open(t, prefix, in.Client()), testbed.VerifyOptions())
		testbed.ExpectStatuses(t, q, map[string][]verify.Status{"model/README.md": {verify.StatusUnverified}})
		if d := testbed.ByPath(q)["model/README.md"].Detail; !strings.Contains(d, "no checksum") {
			t.Errorf("quick README.md without checksums: detail %q", d)
		}

		d := verify.Deep(testbed.Ctx(t), f.M, s, testbed.VerifyOptions())
		testbed.ExpectStatuses(t, d, map[string][]verify.Status{sh[1]: {verify.StatusCorrupt}}, verify.StatusOK)
	})

	t.Run("azure", func(t *testing.T) {
		t.Parallel()
		b := testbed.AzureBackend(t)
		prefix := testbed.FreshPrefix("unverified")
		s := b.Open(t, prefix, nil)
		testbed.Seed(t, s, f)
		testbed.AzureBlocks(t, b, prefix+"/"+sh[0], good, nil)
		testbed.AzureBlocks(t, b, prefix+"/"+sh[1], bad, nil)
		q := verify.Quick(testbed.Ctx(t), f.M, s, testbed.VerifyOptions())
		testbed.ExpectStatuses(t, q, map[string][]verify.Status{sh[0]: {verify.StatusUnverified}, sh[1]: {verify.StatusUnverified}}, verify.StatusOK)
		d := verify.Deep(testbed.Ctx(t), f.M, s, testbed.VerifyOptions())
		testbed.ExpectStatuses(t, d, map[string][]verify.Status{sh[1]: {verify.StatusCorrupt}}, verify.StatusOK)

		// An uploader's unvalidated Content-MD5 that disagrees with the bytes: quick reports
		// the mismatch, deep finds the bytes right and says the metadata is wrong.
		wrong := f.M.Files[0].Sums.MD5
		testbed.AzureBlocks(t, b, prefix+"/"+sh[0], good, mustB64(t, wrong))
		q = verify.Quick(testbed.Ctx(t), f.M, s, testbed.VerifyOptions())
		testbed.ExpectStatuses(t, q, map[string][]verify.Status{sh[0]: {verify.StatusChecksumMismatch}})
		d = verify.Deep(testbed.Ctx(t), f.M, s, testbed.VerifyOptions())
		testbed.ExpectStatuses(t, d, map[string][]verify.Status{sh[0]: {verify.StatusOK}})
		if det := testbed.ByPath(d)[sh[0]].Detail; !strings.Contains(det, "wrong metadata") {
			t.Errorf("deep %s: detail %q does not report the wrong Content-MD5", sh[0], det)
		}
	})

	t.Run("gcs", func(t *testing.T) {
		t.Parallel()
		b := testbed.GCSBackend(t)
		prefix := testbed.FreshPrefix("unverified")
		s := b.Open(t, prefix, nil)
		testbed.Seed(t, s, f)
		// A composite object (no MD5, full-object CRC32C) is still proven by its CRC32C.
		half := len(good) / 2
		b.GCS.Server.CreateObject(fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{BucketName: testbed.Bucket, Name: prefix + "/tmp-a"}, Content: good[:half]})
		b.GCS.Server.CreateObject(fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{BucketName: testbed.Bucket, Name: prefix + "/tmp-b"}, Content: good[half:]})
		gcsCompose(t, b, prefix, sh[0])
		// fake-gcs-server gives composite objects an MD5 (GCS does not, and reports no
		// componentCount): strip MD5s from listings as GCS would for composite objects.
		strip := &faultproxy.Rule{Match: faultproxy.Ops(faultproxy.OpList), Action: faultproxy.Body(dropJSON("md5Hash"))}
		s = b.Open(t, prefix, faultproxy.New(strip).Client())
		q := verify.Quick(testbed.Ctx(t), f.M, s, testbed.VerifyOptions())
		fr := testbed.ByPath(q)[sh[0]]
		if fr.Status != verify.StatusOK || fr.Actual.CRC32C == "" || fr.Actual.MD5 != "" {
			t.Errorf("quick composite %s: %s %+v (%s)", sh[0], fr.Status, fr.Actual, fr.Detail)
		}

		// A store that reports the manifest's checksums over other bytes (it took an
		// uploader's word, or its metadata rotted apart from the data): quick verification
		// cannot tell; deep verification can, and says which side the store's checksum is on.
		file, _ := f.M.File(sh[1])
		testbed.Put(t, s, sh[1], bad, providers.Checksums{})
		forge := faultproxy.New(&faultproxy.Rule{Match: faultproxy.Ops(faultproxy.OpList), Action: faultproxy.Body(forgeListing(bad, file.Sums.CRC32C, file.Sums.MD5))})
		s = b.Open(t, prefix, forge.Client())
		if st := testbed.ByPath(verify.Quick(testbed.Ctx(t), f.M, s, testbed.VerifyOptions()))[sh[1]].Status; st != verify.StatusOK {
			t.Fatalf("the forged listing did not take: quick says %s", st)
		}
		d := verify.Deep(testbed.Ctx(t), f.M, s, testbed.VerifyOptions())
		fr = testbed.ByPath(d)[sh[1]]
		if fr.Status != verify.StatusCorrupt || !strings.Contains(fr.Detail, "matches the manifest, not the bytes") {
			t.Errorf("deep forged %s: %s (%s)", sh[1], fr.Status, fr.Detail)
		}
	})
}

// dropJSON removes every "key": "value" member from a JSON document.
func dropJSON(key string) func([]byte) []byte {
	re := regexp.MustCompile(`,?\s*"` + key + `"\s*:\s*"[^"]*"`)
	return func(b []byte) []byte { return re.ReplaceAll(b, nil) }
}

// forgeListing replaces, in a GCS listing, the CRC32C and MD5 of data with the given values.
func forgeListing(data []byte, crc, md5sum string) func([]byte) []byte {
	sums := manifest.ChecksumsOf(data)
	return func(b []byte) []byte {
		b = bytes.ReplaceAll(b, []byte(`"`+sums.CRC32C+`"`), []byte(`"`+crc+`"`))
		return bytes.ReplaceAll(b, []byte(`"`+sums.MD5+`"`), []byte(`"`+md5sum+`"`))
	}
}

func stripS3Checksums(h http.Header) {
	for k := range h {
		if strings.HasPrefix(strings.ToLower(k), "x-amz-checksum") {
			h.Del(k)
		}
	}
}

func mustB64(t *testing.T, s string) []byte {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// s3Multipart uploads data as a one-part multipart upload with a COMPOSITE checksum of alg, or
// with no checksum at all when alg is "".
func s3Multipart(t *testing.T, c *s3.Client, key string, data []byte, alg types.ChecksumAlgorithm) {
	t.Helper()
	ctx := testbed.Ctx(t)
	noChecksum := func(o *s3.Options) {
		if alg == "" {
			o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		}
	}
	in := &s3.CreateMultipartUploadInput{Bucket: aws.String(testbed.Bucket), Key: aws.String(key)}
	if alg != "" {
		in.ChecksumAlgorithm, in.ChecksumType = alg, types.ChecksumTypeComposite
	}
	up, err := c.CreateMultipartUpload(ctx, in, noChecksum)
	if err != nil {
		t.Fatalf("create multipart %s: %v", key, err)
	}
	pin := &s3.UploadPartInput{Bucket: aws.String(testbed.Bucket), Key: aws.String(key), UploadId: up.UploadId,
		PartNumber: aws.Int32(1), Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data)))}
	if alg != "" {
		pin.ChecksumAlgorithm = alg
	}
	part, err := c.UploadPart(ctx, pin, noChecksum)
	if err != nil {
		t.Fatalf("upload part %s: %v", key, err)
	}
	_, err = c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket: aws.String(testbed.Bucket), Key: aws.String(key), UploadId: up.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{
			ETag: part.ETag, PartNumber: aws.Int32(1), ChecksumCRC32: part.ChecksumCRC32,
		}}},
	}, noChecksum)
	if err != nil {
		t.Fatalf("complete multipart %s: %v", key, err)
	}
}

// gcsCompose composes dst from prefix/tmp-a and prefix/tmp-b with the storage SDK (the emulator
// is STORAGE_EMULATOR_HOST).
func gcsCompose(t *testing.T, b *testbed.Backend, prefix, dst string) {
	t.Helper()
	c, err := storage.NewClient(testbed.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	bk := c.Bucket(testbed.Bucket)
	if _, err := bk.Object(prefix+"/"+dst).ComposerFrom(bk.Object(prefix+"/tmp-a"), bk.Object(prefix+"/tmp-b")).Run(testbed.Ctx(t)); err != nil {
		t.Fatalf("compose: %v", err)
	}
	for _, n := range []string{"tmp-a", "tmp-b"} {
		_ = bk.Object(prefix + "/" + n).Delete(testbed.Ctx(t))
	}
}
