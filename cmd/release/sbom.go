package main

import (
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"sort"
	"strings"
)

// SBOMMediaType is the media type of the SBOM (CycloneDX 1.5 JSON), also the artifact type of
// the OCI referrer that attaches it to an image.
const SBOMMediaType = "application/vnd.cyclonedx+json"

// cdxBOM is the part of CycloneDX 1.5 the SBOM fills in.
type cdxBOM struct {
	BOMFormat    string         `json:"bomFormat"`
	SpecVersion  string         `json:"specVersion"`
	SerialNumber string         `json:"serialNumber"`
	Version      int            `json:"version"`
	Metadata     cdxMetadata    `json:"metadata"`
	Components   []cdxComponent `json:"components"`
	Dependencies []cdxDep       `json:"dependencies"`
}

type cdxMetadata struct {
	Timestamp  string         `json:"timestamp,omitempty"`
	Tools      cdxTools       `json:"tools"`
	Component  cdxComponent   `json:"component"`
	Properties []cdxProperty  `json:"properties,omitempty"`
	Lifecycles []cdxLifecycle `json:"lifecycles"`
}

type cdxTools struct {
	Components []cdxComponent `json:"components"`
}

type cdxLifecycle struct {
	Phase string `json:"phase"`
}

type cdxComponent struct {
	Type       string        `json:"type"`
	BOMRef     string        `json:"bom-ref,omitempty"`
	Name       string        `json:"name"`
	Version    string        `json:"version,omitempty"`
	PURL       string        `json:"purl,omitempty"`
	Hashes     []cdxHash     `json:"hashes,omitempty"`
	Properties []cdxProperty `json:"properties,omitempty"`
}

type cdxHash struct {
	Alg     string `json:"alg"`
	Content string `json:"content"`
}

type cdxProperty struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type cdxDep struct {
	Ref       string   `json:"ref"`
	DependsOn []string `json:"dependsOn,omitempty"`
}

// goPURL is the package URL of a Go module: pkg:golang/PATH@VERSION (path segments escaped,
// the slashes kept).
func goPURL(path, version string) string {
	segs := strings.Split(path, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(strings.ToLower(s))
	}
	p := "pkg:golang/" + strings.Join(segs, "/")
	if version != "" && version != "(devel)" {
		p += "@" + url.PathEscape(version)
	}
	return p
}

// SBOMFor returns the CycloneDX SBOM of a Go binary, from the build information the go command
// wrote into it: the main module, every module dependency with its version and go.sum hash
// (after replacements), the Go toolchain and the build settings. The same binary gives the same
// bytes: no timestamp but the given one (the commit time), a serial number derived from the
// binary's SHA-256. extra are further components (the image's CA certificates).
func SBOMFor(binPath, version, created string, extra []cdxComponent) ([]byte, error) {
	bi, err := buildinfo.ReadFile(binPath)
	if err != nil {
		return nil, fmt.Errorf("%s: reading the Go build information: %w", binPath, err)
	}
	data, err := os.ReadFile(binPath)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	hexSum := hex.EncodeToString(sum[:])
	if version == "" {
		version = bi.Main.Version
	}
	main := cdxComponent{Type: "application", BOMRef: goPURL(bi.Main.Path, version), Name: bi.Main.Path, Version: version,
		PURL: goPURL(bi.Main.Path, version), Hashes: []cdxHash{{Alg: "SHA-256", Content: hexSum}}}
	var settings []cdxProperty
	for _, s := range bi.Settings {
		settings = append(settings, cdxProperty{Name: "go:build:" + s.Key, Value: s.Value})
	}
	settings = append(settings, cdxProperty{Name: "go:toolchain", Value: bi.GoVersion})
	main.Properties = settings

	comps := []cdxComponent{{Type: "library", BOMRef: "pkg:golang/stdlib@" + bi.GoVersion, Name: "stdlib",
		Version: bi.GoVersion, PURL: "pkg:golang/stdlib@" + bi.GoVersion}}
	for _, d := range bi.Deps {
		m := d
		var props []cdxProperty
		if d.Replace != nil {
			props = append(props, cdxProperty{Name: "go:module:replaces", Value: d.Path + "@" + d.Version})
			m = d.Replace
		}
		if m.Sum != "" {
			props = append(props, cdxProperty{Name: "go:module:sum", Value: m.Sum})
		}
		ref := goPURL(m.Path, m.Version)
		comps = append(comps, cdxComponent{Type: "library", BOMRef: ref, Name: m.Path, Version: m.Version, PURL: ref, Properties: props})
	}
	sort.Slice(comps, func(i, j int) bool { return comps[i].BOMRef < comps[j].BOMRef })
	comps = append(comps, extra...)
	deps := []cdxDep{{Ref: main.BOMRef}}
	for _, c := range comps {
		deps[0].DependsOn = append(deps[0].DependsOn, c.BOMRef)
	}
	bom := cdxBOM{
		BOMFormat: "CycloneDX", SpecVersion: "1.5", Version: 1,
		// a UUID (RFC 4122 form) from the binary's digest: one binary, one serial number
		SerialNumber: "urn:uuid:" + hexSum[0:8] + "-" + hexSum[8:12] + "-5" + hexSum[13:16] + "-8" + hexSum[17:20] + "-" + hexSum[20:32],
		Metadata: cdxMetadata{
			Timestamp:  created,
			Tools:      cdxTools{Components: []cdxComponent{{Type: "application", Name: "lifeboat/cmd/release", Version: version}}},
			Component:  main,
			Lifecycles: []cdxLifecycle{{Phase: "build"}},
		},
		Components:   comps,
		Dependencies: deps,
	}
	return json.MarshalIndent(bom, "", "  ")
}
