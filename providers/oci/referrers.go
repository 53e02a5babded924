package oci

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"lifeboat/providers"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
)

// MaxReferrers bounds how many referrers of one artifact type are read (signatures of a manifest).
const MaxReferrers = 64

// Referrer is one artifact attached to a manifest: its manifest digest and its first layer's bytes.
type Referrer struct {
	Digest digest.Digest
	Data   []byte
}

// AttachReferrer attaches blob to the manifest subject (the exact bytes at the store's reference)
// as an OCI 1.1 referrer: an image manifest with artifactType, an empty config, blob as its one
// layer of that media type, and subject = the manifest's descriptor. On a registry without the
// referrers API, oras-go keeps the referrers tag schema (an index tagged sha256-<hex>) up to date,
// which is where Referrers looks too. It returns the referrer's digest.
func AttachReferrer(ctx context.Context, s providers.Store, subject []byte, artifactType string, blob []byte, annotations map[string]string) (digest.Digest, error) {
	rs, ok := asRegistry(s)
	if !ok {
		return "", fmt.Errorf("%s: %w: not a registry", s, providers.ErrUnsupported)
	}
	sub := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(subject), Size: int64(len(subject))}
	layer := ocispec.Descriptor{MediaType: artifactType, Digest: digest.FromBytes(blob), Size: int64(len(blob))}
	exists, err := rs.repo.Blobs().Exists(ctx, layer)
	if err != nil {
		return "", rs.fail("write", layer.Digest.String(), err)
	}
	if !exists {
		if err := rs.repo.Blobs().Push(ctx, layer, bytes.NewReader(blob)); err != nil {
			return "", rs.fail("write", layer.Digest.String(), err)
		}
	}
	ann := map[string]string{ocispec.AnnotationCreated: time.Now().UTC().Format(time.RFC3339)}
	for k, v := range annotations {
		ann[k] = v
	}
	desc, err := oras.PackManifest(ctx, rs.repo, oras.PackManifestVersion1_1, artifactType, oras.PackManifestOptions{
		Subject:             &sub,
		Layers:              []ocispec.Descriptor{layer},
		ManifestAnnotations: ann,
	})
	if err != nil {
		return "", rs.fail("write referrer", sub.Digest.String(), err)
	}
	return desc.Digest, nil
}

// Referrers returns the first layer of each referrer of artifactType attached to the manifest
// subject (at most MaxReferrers, each layer at most limit bytes), through the referrers API or
// the tag schema fallback. A referrer that cannot be read is skipped and counted in skipped.
func Referrers(ctx context.Context, s providers.Store, subject []byte, artifactType string, limit int64) (refs []Referrer, skipped int, err error) {
	rs, ok := asRegistry(s)
	if !ok {
		return nil, 0, fmt.Errorf("%s: %w: not a registry", s, providers.ErrUnsupported)
	}
	sub := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(subject), Size: int64(len(subject))}
	var descs []ocispec.Descriptor
	errEnough := errors.New("enough referrers")
	err = rs.repo.Referrers(ctx, sub, artifactType, func(page []ocispec.Descriptor) error {
		for _, d := range page {
			if len(descs) == MaxReferrers {
				return errEnough
			}
			descs = append(descs, d)
		}
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		return nil, 0, rs.fail("list referrers", sub.Digest.String(), err)
	}
	for _, d := range descs {
		if d.Size > maxRegistryManifestBytes {
			skipped++
			continue
		}
		mdata, err := fetchBounded(ctx, rs, d, 1<<20)
		if err != nil {
			if ctx.Err() != nil {
				return nil, 0, ctx.Err()
			}
			skipped++
			continue
		}
		var m ocispec.Manifest
		if json.Unmarshal(mdata, &m) != nil || len(m.Layers) == 0 || m.Layers[0].MediaType != artifactType || m.Layers[0].Size > limit {
			skipped++
			continue
		}
		data, err := fetchBounded(ctx, rs, m.Layers[0], limit)
		if err != nil {
			if ctx.Err() != nil {
				return nil, 0, ctx.Err()
			}
			skipped++
			continue
		}
		refs = append(refs, Referrer{Digest: d.Digest, Data: data})
	}
	return refs, skipped, nil
}

// fetchBounded reads a blob or manifest by descriptor, at most limit bytes, checking its digest.
func fetchBounded(ctx context.Context, rs *registryStore, d ocispec.Descriptor, limit int64) ([]byte, error) {
	if d.Size > limit {
		return nil, fmt.Errorf("%w: %s is %d bytes (limit %d)", providers.ErrObjectTooLarge, d.Digest, d.Size, limit)
	}
	rc, err := rs.repo.Fetch(ctx, d)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit || digest.FromBytes(data) != d.Digest {
		return nil, fmt.Errorf("%w: %s does not match its digest", providers.ErrContentMismatch, d.Digest)
	}
	return data, nil
}
