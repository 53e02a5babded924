package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// The image's user: distroless's "nonroot" (65532), which the Kubernetes examples' securityContext
// names too.
const (
	imageUID   = 65532
	imageUser  = "65532:65532"
	binaryPath = "usr/local/bin/lifeboat"
	caPath     = "etc/ssl/certs/ca-certificates.crt"
)

// blob is content to push: its descriptor and bytes.
type blob struct {
	desc ocispec.Descriptor
	data []byte
}

func newBlob(mediaType string, data []byte) blob {
	return blob{desc: ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(data), Size: int64(len(data))}, data: data}
}

func jsonBlob(mediaType string, v any) (blob, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return blob{}, err
	}
	return newBlob(mediaType, data), nil
}

// imageMeta is what every platform's image records about the build.
type imageMeta struct {
	Version  string
	Revision string
	Created  time.Time // the commit time: the only time in the image, so the same commit gives the same digest
	Source   string    // the source repository URL, for the label; may be empty
	CACerts  []byte    // the CA bundle, or nil for none
}

// platformImage is one platform's image: its layer, config and manifest, built in memory.
type platformImage struct {
	Platform ocispec.Platform
	Binary   string
	Layer    blob
	Config   blob
	Manifest blob
}

type tarEntry struct {
	hdr  tar.Header
	data []byte
}

// layerTar is the image's only layer: the static binary, the CA bundle, /etc/passwd and
// /etc/group naming the non-root user, its home and /tmp. Entries are sorted by name, with fixed
// owners, modes and times (the commit time) and no user or group names: the same inputs give
// the same bytes.
func layerTar(bin []byte, meta imageMeta) ([]byte, error) {
	mt := meta.Created.UTC().Truncate(time.Second)
	dir := func(name string, mode int64, uid int) tarEntry {
		return tarEntry{hdr: tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, Uid: uid, Gid: uid, ModTime: mt}}
	}
	file := func(name string, mode int64, data []byte) tarEntry {
		return tarEntry{hdr: tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: mt}, data: data}
	}
	entries := []tarEntry{
		dir("etc", 0o755, 0),
		file("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")),
		file("etc/group", 0o644, []byte("root:x:0:\nnonroot:x:65532:\n")),
		dir("home", 0o755, 0),
		dir("home/nonroot", 0o700, imageUID),
		dir("tmp", 0o1777, 0),
		dir("usr", 0o755, 0),
		dir("usr/local", 0o755, 0),
		dir("usr/local/bin", 0o755, 0),
		file(binaryPath, 0o755, bin),
	}
	if meta.CACerts != nil {
		entries = append(entries, dir("etc/ssl", 0o755, 0), dir("etc/ssl/certs", 0o755, 0), file(caPath, 0o644, meta.CACerts))
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].hdr.Name < entries[j].hdr.Name })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := e.hdr
		h.Format = tar.FormatPAX // no PAX records are needed for these headers, so this writes plain USTAR
		if err := tw.WriteHeader(&h); err != nil {
			return nil, fmt.Errorf("layer: %s: %w", h.Name, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, fmt.Errorf("layer: %s: %w", h.Name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// gzipBytes compresses with no name and no time in the gzip header (deterministic for a given
// Go version: compress/gzip's output is fixed for fixed input and level).
func gzipBytes(data []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.DefaultCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(data); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func labels(meta imageMeta) map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":       "lifeboat",
		"org.opencontainers.image.description": "Lifeboat: disaster recovery for multi-region vLLM serving",
		"org.opencontainers.image.version":     meta.Version,
		"org.opencontainers.image.created":     meta.Created.UTC().Format(time.RFC3339),
	}
	if meta.Revision != "" {
		l["org.opencontainers.image.revision"] = meta.Revision
	}
	if meta.Source != "" {
		l["org.opencontainers.image.source"] = meta.Source
	}
	return l
}

// buildPlatform builds one platform's image around the binary at binPath.
func buildPlatform(p ocispec.Platform, binPath string, meta imageMeta) (*platformImage, error) {
	bin, err := os.ReadFile(binPath)
	if err != nil {
		return nil, fmt.Errorf("the %s/%s binary: %w", p.OS, p.Architecture, err)
	}
	raw, err := layerTar(bin, meta)
	if err != nil {
		return nil, err
	}
	gz, err := gzipBytes(raw)
	if err != nil {
		return nil, err
	}
	layer := newBlob(ocispec.MediaTypeImageLayerGzip, gz)
	created := meta.Created.UTC()
	cfg := ocispec.Image{
		Created:  &created,
		Platform: p,
		Config: ocispec.ImageConfig{
			User:       imageUser,
			Entrypoint: []string{"/" + binaryPath},
			Cmd:        []string{"--help"},
			Env: []string{
				"PATH=/usr/local/bin:/usr/bin:/bin",
				"HOME=/home/nonroot",
				"SSL_CERT_FILE=/" + caPath,
				"TMPDIR=/tmp",
			},
			WorkingDir: "/home/nonroot",
			Labels:     labels(meta),
		},
		RootFS: ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{digest.FromBytes(raw)}},
		History: []ocispec.History{{Created: &created, CreatedBy: "lifeboat cmd/release image: static binary " +
			"(CGO_ENABLED=0 -trimpath -tags disable_grpc_modules), CA certificates, non-root user 65532"}},
	}
	config, err := jsonBlob(ocispec.MediaTypeImageConfig, cfg)
	if err != nil {
		return nil, err
	}
	man := ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageManifest,
		Config:    config.desc,
		Layers:    []ocispec.Descriptor{layer.desc},
		Annotations: map[string]string{
			ocispec.AnnotationCreated: created.Format(time.RFC3339),
			ocispec.AnnotationVersion: meta.Version,
		},
	}
	manifest, err := jsonBlob(ocispec.MediaTypeImageManifest, man)
	if err != nil {
		return nil, err
	}
	manifest.desc.Platform = &ocispec.Platform{OS: p.OS, Architecture: p.Architecture, Variant: p.Variant}
	return &platformImage{Platform: p, Binary: binPath, Layer: layer, Config: config, Manifest: manifest}, nil
}

// indexOf is the image index over the platforms, in the order given.
func indexOf(imgs []*platformImage, meta imageMeta) (blob, error) {
	idx := ocispec.Index{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageIndex,
		Annotations: map[string]string{
			ocispec.AnnotationCreated: meta.Created.UTC().Format(time.RFC3339),
			ocispec.AnnotationVersion: meta.Version,
		},
	}
	for _, im := range imgs {
		idx.Manifests = append(idx.Manifests, im.Manifest.desc)
	}
	return jsonBlob(ocispec.MediaTypeImageIndex, idx)
}

// referrer is an artifact manifest (OCI 1.1: artifactType, empty config) carrying one blob and
// pointing at subject: how the SBOM and the signatures are attached.
func referrer(artifactType string, content blob, subject ocispec.Descriptor, created time.Time) (blob, error) {
	subject.Platform = nil
	subject.Annotations = nil
	man := ocispec.Manifest{
		Versioned:    specs.Versioned{SchemaVersion: 2},
		MediaType:    ocispec.MediaTypeImageManifest,
		ArtifactType: artifactType,
		Config:       ocispec.DescriptorEmptyJSON,
		Layers:       []ocispec.Descriptor{content.desc},
		Subject:      &subject,
		Annotations:  map[string]string{ocispec.AnnotationCreated: created.UTC().Format(time.RFC3339)},
	}
	return jsonBlob(ocispec.MediaTypeImageManifest, man)
}

// sha256Hex is the hex SHA-256 of data.
func sha256Hex(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}
